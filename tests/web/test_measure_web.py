"""The measure page and ``/api/measure``: a measurement of uploaded files or of the corpus folder, started, followed
(a reload finds it), cancelled, downloaded, with every ``tokens`` figure equal to the reference library's, and every
mistake answered in words with its status."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest
from fastapi.testclient import TestClient
from helpers import measure_corpus
from helpers.lab_hold import Hold
from helpers.oracles import tiktoken_reference

from app.settings import Settings
from app.web.app import create_app

docs, corpus = measure_corpus.fixtures()


def cl100k(texts) -> int:
    ref = tiktoken_reference("cl100k_base")
    return sum(len(ref.encode_ordinary(t)) for t in texts)


@pytest.fixture()
def make(tmp_path):
    clients = []

    def build(**overrides) -> TestClient:
        given = {"lab_runs_dir": tmp_path / "runs", "uploads_dir": tmp_path / "uploads", "lab_pool": "thread",
                 "measure_dir": tmp_path / "measure", "measure_pool": "thread"} | overrides
        settings = Settings(**given)
        client = TestClient(create_app(settings))
        client.__enter__()
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.__exit__(None, None, None)


def wait_measured(client: TestClient, measurement_id: str, timeout: float = 120) -> dict:
    """Poll until the measurement has ended (a deadline against hanging, not a speed requirement)."""
    deadline = time.monotonic() + timeout
    while True:
        out = client.get(f"/api/measure/{measurement_id}").json()
        if out["status"] not in ("queued", "running"):
            return out
        assert time.monotonic() < deadline, out
        time.sleep(0.05)


def test_uploaded_files_measured_through_the_api(make, corpus, docs):
    client = make()
    texts = docs[:8]
    r = client.post("/api/measure", data={"t": ["cl100k_base,gpt2"], "group_by": "field:lang",
                                          "reference_group": "en", "reference_tokenizer": "cl100k_base"},
                    files=[("file", ("part-a.jsonl", measure_corpus.jsonl_bytes(texts[:4]))),
                           ("file", ("part-b.jsonl.gz", __import__("gzip").compress(measure_corpus.jsonl_bytes(texts[4:]))))])
    assert r.status_code == 202, r.text
    started = r.json()
    assert r.headers["location"] == f"/api/measure/{started['id']}" and started["page"] == f"/measure/jobs/{started['id']}"
    assert [i["name"] for i in started["inputs"]] == ["part-a.jsonl", "part-b.jsonl.gz"]
    done = wait_measured(client, started["id"])
    assert done["status"] == "done", done
    report = done["report"]
    assert report["tokenizers"]["cl100k_base"]["tokens"] == cl100k(d["text"] for d in texts)
    assert report["tokenizers"]["cl100k_base"]["groups"]["en"]["premium"] == 1.0
    assert report["tokenizers"]["gpt2"]["tokenizer_premium"] > 1
    assert done["progress"]["percent"] == 100.0
    # the uploaded files are gone once measured; the report stays
    assert not any((client.app.state.settings.measure_dir / "files").glob("*/*"))
    csv_body = client.get(f"/api/measure/{started['id']}/export", params={"format": "csv"})
    assert csv_body.status_code == 200 and "attachment" in csv_body.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(csv_body.text)))
    assert int(rows[0]["tokens"]) == report["tokenizers"]["cl100k_base"]["tokens"]
    as_json = client.get(f"/api/measure/{started['id']}/export").json()
    assert as_json["tokenizers"] == report["tokenizers"]


def test_the_corpus_folder_by_json(make, corpus, docs, tmp_path):
    folder = tmp_path / "corpora"
    measure_corpus.write_jsonl(folder / "sub" / "docs.jsonl", docs)
    (folder / "notes.md").parent.mkdir(exist_ok=True)
    (folder / "notes.md").write_text("not listed")
    client = make(corpus_dir=folder)
    listed = client.get("/api/measure/corpus").json()
    assert listed == {"corpus_dir": True, "files": [{"path": "sub/docs.jsonl", "bytes": (folder / "sub/docs.jsonl").stat().st_size}]}
    r = client.post("/api/measure", json={"tokenizers": ["gpt-4"], "corpus": ["sub/docs.jsonl"], "group_by": "file"})
    assert r.status_code == 202, r.text
    done = wait_measured(client, r.json()["id"])
    cl = done["report"]["tokenizers"]["cl100k_base"]
    assert cl["tokens"] == cl100k(d["text"] for d in docs)
    assert list(cl["groups"]) == ["sub/docs.jsonl"]  # called by its name in the folder, never the server's path
    assert str(folder) not in json.dumps(done)


@pytest.mark.parametrize(
    ("kwargs", "status", "said"),
    [
        ({"json": {"tokenizers": ["gpt2"], "corpus": ["../secret.txt"]}}, 404, "no file '../secret.txt' in the corpus folder"),
        ({"json": {"tokenizers": ["no-such"], "corpus": ["a.txt"]}}, 404, "unknown tokenizer 'no-such'"),
        ({"json": {"tokenizers": [], "corpus": ["a.txt"]}}, 422, ""),
        ({"json": {"tokenizers": ["gpt2"], "corpus": ["a.txt"], "group_by": "lang"}}, 422, "--group-by takes"),
        ({"json": {"tokenizers": ["gpt2"], "corpus": ["a.txt"], "reference_tokenizer": "qwen3"}}, 422,
         "the reference tokenizer 'qwen3' is not among those measured"),
        ({"json": {"tokenizers": ["gpt2"], "corpus": ["a.txt"], "reference_group": "en"}}, 422,
         "a reference group needs the documents grouped"),
        ({"json": {"tokenizers": ["gpt2"] * 3 + ["gpt-2", "cl100k_base", "o200k_base", "qwen3", "llama-3", "gemma-3",
                                                  "mistral-7b", "p50k_base"], "corpus": ["a.txt"]}}, 422,
         "one measurement takes up to 8"),
        ({"data": {"t": "gpt2"}}, 422, "choose files to measure"),
    ],
)
def test_mistakes_are_said_with_their_status(make, tmp_path, kwargs, status, said):
    folder = tmp_path / "corpora"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("not for you")
    client = make(corpus_dir=folder)
    r = client.post("/api/measure", **kwargs)
    assert r.status_code == status, r.text
    assert said in r.text


def test_no_corpus_folder_and_unknown_measurements(make):
    client = make()
    r = client.post("/api/measure", json={"tokenizers": ["gpt2"], "corpus": ["a.txt"]})
    assert r.status_code == 404 and "--corpus-dir" in r.json()["detail"]
    assert client.get("/api/measure/corpus").json() == {"corpus_dir": False, "files": []}
    assert client.get("/api/measure/0123456789").status_code == 404
    assert client.get("/api/measure/../../etc").status_code == 404
    assert client.get("/measure/jobs/0123456789").status_code == 404


def test_uploads_over_the_limit_are_413(make):
    client = make(measure_max_upload_bytes=1000)
    r = client.post("/api/measure", data={"t": "gpt2"}, files=[("file", ("big.txt", b"a " * 1000))])
    assert r.status_code == 413 and "over 0 MB" not in r.text and "tokenplay measure" in r.json()["detail"]
    assert not any((client.app.state.settings.measure_dir / "files").glob("*"))


def test_a_measurement_survives_a_reload_and_can_be_cancelled(make, corpus, tmp_path):
    hold = Hold(tmp_path / "hold")
    client = make(measure_progress_wrap=hold)
    r = client.post("/api/measure", data={"t": "gpt2"}, files=[("file", ("docs.jsonl", corpus.read_bytes()))])
    measurement_id = r.json()["id"]
    hold.wait_held()
    page = client.get(f"/measure/jobs/{measurement_id}")  # a reload, or another tab
    assert page.status_code == 200
    assert 'hx-trigger="every 1s"' in page.text and "Cancel" in page.text and 'data-status="running"' in page.text
    block = client.get(f"/measure/jobs/{measurement_id}", headers={"HX-Request": "true"})
    assert block.text.lstrip().startswith('<div id="measure-job"')
    assert client.get(f"/api/measure/{measurement_id}/export").status_code == 409
    r = client.post(f"/api/measure/{measurement_id}/cancel")
    assert r.status_code == 202
    done = wait_measured(client, measurement_id)
    assert done["status"] == "cancelled" and done["error"] == "the measurement was cancelled"
    again = client.post(f"/api/measure/{measurement_id}/cancel")
    assert again.status_code == 409 and "nothing to cancel" in again.json()["detail"]
    page = client.get(f"/measure/jobs/{measurement_id}")
    assert "every 1s" not in page.text and "the measurement was cancelled" in page.text
    assert not any((client.app.state.settings.measure_dir / "files").glob("*/*"))


def test_a_full_queue_is_429(make, corpus, tmp_path):
    hold = Hold(tmp_path / "hold")
    client = make(measure_progress_wrap=hold, measure_workers=1, measure_queue=0)
    first = client.post("/api/measure", data={"t": "gpt2"}, files=[("file", ("a.jsonl", corpus.read_bytes()))])
    assert first.status_code == 202
    hold.wait_held()
    second = client.post("/api/measure", data={"t": "gpt2"}, files=[("file", ("b.jsonl", corpus.read_bytes()))])
    assert second.status_code == 429 and "measurements are busy" in second.json()["detail"]
    assert "retry-after" in second.headers
    hold.release()
    assert wait_measured(client, first.json()["id"])["status"] == "done"


def test_the_page_starts_a_measurement_and_lists_it(make, corpus, docs, tmp_path):
    folder = tmp_path / "corpora"
    measure_corpus.write_jsonl(folder / "docs.jsonl", docs[:5])
    client = make(corpus_dir=folder)
    page = client.get("/measure")
    assert page.status_code == 200 and 'name="file"' in page.text and 'value="docs.jsonl"' in page.text
    assert 'aria-current="page">Measure</a>' in page.text
    r = client.post("/measure", data={"t": ["cl100k_base"], "corpus": ["docs.jsonl"], "group": "field",
                                      "group_field": "lang", "reference_group": "en"},
                    files=[("file", ("", b""))], follow_redirects=False)
    assert r.status_code == 303, r.text
    where = r.headers["location"]
    measurement_id = where.rsplit("/", 1)[1]
    assert measurement_id in r.cookies.get("tp_measure", "") or measurement_id in client.cookies.get("tp_measure", "")
    done = wait_measured(client, measurement_id)
    assert done["report"]["tokenizers"]["cl100k_base"]["tokens"] == cl100k(d["text"] for d in docs[:5])
    page = client.get(where)
    assert "Download CSV" in page.text and "Premium per group" in page.text
    assert f"{done['report']['tokenizers']['cl100k_base']['tokens']:,}" in page.text
    assert client.get(f"{where}/report.csv").text.startswith("tokenizer,group,")
    assert client.get(f"{where}/report.xml").status_code == 404
    listing = client.get("/measure").text
    assert f'href="/measure/jobs/{measurement_id}"' in listing and "docs.jsonl" in listing


def test_the_page_answers_a_mistake_with_the_form_and_its_status(make):
    client = make()
    r = client.post("/measure", data={"t": ["cl100k_base"], "field": "body"}, files=[("file", ("", b""))])
    assert r.status_code == 422
    assert "choose files to measure" in r.text and 'value="body"' in r.text  # what was typed is kept


def test_user_text_is_never_live_html(make):
    client = make()
    evil = '<img src=x onerror=alert(1)>'
    r = client.post("/api/measure", data={"t": "gpt2", "group_by": "field:lang"},
                    files=[("file", (f"{evil}.jsonl", json.dumps({"text": "hi", "lang": evil}).encode() + b"\n"))])
    measurement_id = r.json()["id"]
    wait_measured(client, measurement_id)
    page = client.get(f"/measure/jobs/{measurement_id}").text
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    listing = client.get("/measure").text
    assert "<img src=x" not in listing


def test_in_worker_processes_as_the_server_runs_it(make, corpus, docs, tmp_path):
    hold = Hold(tmp_path / "hold", on=False)
    client = make(measure_pool="process", measure_progress_wrap=hold)
    r = client.post("/api/measure", data={"t": "cl100k_base,mistral-7b"},
                    files=[("file", ("docs.jsonl", corpus.read_bytes()))])
    done = wait_measured(client, r.json()["id"])
    assert done["status"] == "done", done
    assert done["report"]["tokenizers"]["cl100k_base"]["tokens"] == cl100k(d["text"] for d in docs)
    hold.on()
    r = client.post("/api/measure", data={"t": "gpt2"}, files=[("file", ("docs.jsonl", corpus.read_bytes()))])
    hold.wait_held()
    client.post(f"/api/measure/{r.json()['id']}/cancel")
    assert wait_measured(client, r.json()["id"])["status"] == "cancelled"


def test_a_done_measurement_whose_report_has_not_arrived_keeps_polling(make):
    """A record that says done before its report is readable (another process's store, a write on its way) is shown
    as finishing and asked for again, never as a broken page."""
    from app.services.measure import Measurement

    client = make()
    measurements = client.app.state.measurements
    record = Measurement(id="0123456789abcdef", tokenizers=["cl100k_base"], inputs=[{"name": "a.txt", "bytes": 3}],
                         options={}, status="done", report=None)
    measurements.store.put(record)
    page = client.get(f"/measure/jobs/{record.id}")
    assert page.status_code == 200, page.text
    assert f'hx-get="/measure/jobs/{record.id}"' in page.text and "the report is on its way" in page.text
    assert "Download CSV" not in page.text and "/cancel" not in page.text


def test_a_measurement_finishing_while_its_page_is_built_shows_one_state(make):
    """The store hands this process's live record to the page while a worker thread finishes it (report first,
    then status). Here the worker finishes at the exact moment the page reads the live record's report (the
    record's own hook, no timing): a page that read fields of the live record one by one showed "done" without the
    report it had read a moment before; the page renders one snapshot, running here, then the report on its next
    poll."""
    from app.services.measure import Measurement

    class FinishesWhenRead(Measurement):
        live: Measurement | None = None

        def __getattribute__(self, name):
            value = super().__getattribute__(name)
            if name == "report" and FinishesWhenRead.live is self:  # the worker's apply, then its status
                FinishesWhenRead.live = None
                self.report, self.status = {"corpus": {"input_bytes": 3}}, "done"
            return value

    client = make()
    record = FinishesWhenRead(id="0123456789abcdee", tokenizers=["cl100k_base"], inputs=[{"name": "a.txt", "bytes": 3}],
                              options={}, status="running", report=None, total_bytes=3)
    client.app.state.measurements.store.put(record)
    FinishesWhenRead.live = record
    page = client.get(f"/measure/jobs/{record.id}")
    assert page.status_code == 200, page.text
    assert 'data-status="running"' in page.text and "Measuring:" in page.text, page.text
    assert "the report is on its way" not in page.text
