"""Deterministic generated corpora built from what every install has: test data, and the custom-bpe corpus.

- :func:`english_text` — English prose and code: the Python Language Reference topics shipped in the stdlib
  (``pydoc_data.topics``, PSF licence), then docstrings of a fixed list of stdlib modules.
- :func:`japanese_text` — Japanese without spaces, from a seeded generator over a small built-in grammar and
  word list written for Tokenplay (no external text; the same seed always gives the same text).

Nothing is downloaded. The English text depends on the running Python's stdlib, so files built from it
record the Python version (see ``scripts/train_custom_bpe.py``).
"""

from __future__ import annotations

import importlib
import inspect
import random
import warnings

STDLIB_MODULES = [
    "abc",
    "argparse",
    "ast",
    "asyncio",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email",
    "enum",
    "fractions",
    "functools",
    "gettext",
    "glob",
    "hashlib",
    "heapq",
    "html",
    "http.client",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "logging",
    "math",
    "mimetypes",
    "numbers",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "platform",
    "pprint",
    "random",
    "re",
    "sched",
    "secrets",
    "shutil",
    "socket",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tokenize",
    "traceback",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "warnings",
    "weakref",
    "zipfile",
]


def _docstrings(module_name: str) -> list[str]:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    out = [inspect.getdoc(module) or ""]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # typing.io and friends warn when touched
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            doc = inspect.getdoc(obj)
            if doc:
                out.append(f"{name}\n{doc}")
    return [d for d in out if d]


def _cut(text: str, n_bytes: int) -> str:
    data = text.encode("utf-8")[:n_bytes]
    return data.decode("utf-8", errors="ignore")


def english_text(n_bytes: int = 1_000_000) -> str:
    """About ``n_bytes`` of English (prose with code examples) from the stdlib; repeats if it runs short."""
    from pydoc_data.topics import topics

    docs = [topics[key] for key in sorted(topics)]
    for name in STDLIB_MODULES:
        docs.extend(_docstrings(name))
    text = "\n\n".join(docs)
    if not text:
        raise RuntimeError("no stdlib text found")
    while len(text.encode("utf-8")) < n_bytes:
        text = text + "\n\n" + text
    return _cut(text, n_bytes)


# --- Japanese -------------------------------------------------------------------------------------------
_PEOPLE = [
    "私",
    "僕",
    "彼",
    "彼女",
    "先生",
    "学生",
    "友達",
    "母",
    "父",
    "兄",
    "姉",
    "弟",
    "妹",
    "子供たち",
    "店員",
    "医者",
    "社長",
    "田中さん",
    "鈴木さん",
    "佐藤さん",
    "山田さん",
]
_PLACES = [
    "東京",
    "大阪",
    "京都",
    "北海道",
    "駅",
    "学校",
    "図書館",
    "公園",
    "病院",
    "会社",
    "銀行",
    "郵便局",
    "レストラン",
    "コンビニ",
    "スーパー",
    "美術館",
    "空港",
    "海",
    "山",
    "川",
    "町",
    "村",
    "教室",
    "台所",
    "部屋",
    "庭",
    "喫茶店",
    "大学",
    "研究所",
    "工場",
]
_THINGS = [
    "本",
    "新聞",
    "手紙",
    "写真",
    "映画",
    "音楽",
    "料理",
    "お茶",
    "コーヒー",
    "水",
    "ご飯",
    "パン",
    "果物",
    "野菜",
    "魚",
    "肉",
    "車",
    "電車",
    "自転車",
    "パソコン",
    "スマートフォン",
    "時計",
    "傘",
    "鞄",
    "靴",
    "服",
    "花",
    "猫",
    "犬",
    "鳥",
    "宿題",
    "問題",
    "答え",
    "言葉",
    "漢字",
    "物語",
    "地図",
    "切符",
    "プログラム",
    "データ",
    "計算",
    "辞書",
    "電話",
    "メール",
    "会議",
    "試験",
    "旅行",
    "天気",
    "季節",
    "文化",
    "歴史",
    "経済",
    "科学",
    "技術",
]
_ADJ = [
    "新しい",
    "古い",
    "大きい",
    "小さい",
    "高い",
    "安い",
    "美しい",
    "面白い",
    "難しい",
    "易しい",
    "忙しい",
    "楽しい",
    "寒い",
    "暑い",
    "暖かい",
    "涼しい",
    "静かな",
    "有名な",
    "便利な",
    "大切な",
    "簡単な",
    "元気な",
    "親切な",
    "きれいな",
    "不思議な",
    "特別な",
]
_VERBS_WO = [
    "読みます",
    "書きます",
    "見ます",
    "買います",
    "作ります",
    "食べます",
    "飲みます",
    "使います",
    "探します",
    "調べます",
    "覚えます",
    "教えます",
    "直します",
    "送ります",
]
_VERBS_NI = ["行きます", "来ます", "帰ります", "着きます", "住んでいます", "勤めています", "向かいます"]
_TIME = [
    "今日",
    "昨日",
    "明日",
    "毎朝",
    "毎晩",
    "週末",
    "来週",
    "先月",
    "去年",
    "午前中",
    "夕方",
    "夜",
    "春",
    "夏",
    "秋",
    "冬",
    "最近",
    "いつも",
    "時々",
]
_CONNECT = ["そして、", "しかし、", "それから、", "だから、", "でも、", "実は、", "ところで、", "例えば、"]
_ENDINGS = ("。", "。", "。", "！", "？", "。")


def _jp_sentence(rng: random.Random) -> str:
    kind = rng.randrange(6)
    who, time_ = rng.choice(_PEOPLE), rng.choice(_TIME)
    if kind == 0:
        s = f"{time_}、{who}は{rng.choice(_PLACES)}で{rng.choice(_ADJ)}{rng.choice(_THINGS)}を{rng.choice(_VERBS_WO)}"
    elif kind == 1:
        s = f"{who}は{time_}{rng.choice(_PLACES)}に{rng.choice(_VERBS_NI)}"
    elif kind == 2:
        s = f"この{rng.choice(_THINGS)}はとても{rng.choice(_ADJ).removesuffix('な')}です"
    elif kind == 3:
        s = f"{who}と一緒に{rng.choice(_THINGS)}について話しました。{rng.choice(_CONNECT)}{rng.choice(_THINGS)}も好きです"
    elif kind == 4:
        n = rng.randrange(1, 2000)
        s = f"{rng.choice(_PLACES)}から{rng.choice(_PLACES)}まで{n}円かかりました"
    else:
        s = f"{rng.choice(_CONNECT)}{who}が{rng.choice(_VERBS_WO).removesuffix('ます')}ましたか"
    return s + rng.choice(_ENDINGS)


def japanese_text(n_bytes: int = 1_000_000, seed: int = 7) -> str:
    """About ``n_bytes`` of generated Japanese: sentences without spaces, paragraphs of 3-8 sentences."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < n_bytes:
        para = "".join(_jp_sentence(rng) for _ in range(rng.randint(3, 8)))
        paragraphs.append(para)
        size += len(para.encode("utf-8")) + 1
    return _cut("\n".join(paragraphs), n_bytes)
