/* The compiled twin of sentencepiece's BPE merge loop in app/engines/sentencepiece/bpe_trainer.py (_PythonLoop):
 * the same candidates, the same lazy priority queue (count, then the shorter piece, then its code points, then the
 * older candidate), the same merges, counts and records, faster.
 *
 * bpe_train(words, lengths, freqs, code_points, scripts, flags, max_len, n_merges, top_k, char_ids, merge_ids,
 *           progress, should_stop)
 *   words:       array('i') of character ids, the words one after the other (id 0 is U+2585, the unknown
 *                character, which never pairs)
 *   lengths:     array('i'), each word's length;  freqs: array('q'), each word's count
 *   code_points: array('i'), the code point of each character id
 *   scripts:     bytes, little-endian int32: the script ids of Hiragana, Katakana, Han and Inherited, then
 *                (first, last, script) triples sorted by first (training_corpus.script_ranges)
 *   flags:       bit 0 split_by_unicode_script, 1 split_by_number, 2 split_digits, 3 split_by_whitespace,
 *                4 treat_whitespace_as_suffix, 5 allow_whitespace_only_pieces
 *   char_ids:    array('i'), the id each character has in the model (-1: none), merge_ids: array('i'), the id
 *                the k-th merged piece gets
 * returns (pieces, rows, tops, initial_tokens), or None when should_stop() said so: the merged pieces in order
 * (str), and as int64 bytes, per merge, (left id, right id, count, replaced, corpus tokens after it) and top_k
 * (left id, right id, count) of the best candidates before it, the winner first, -1 past the last.
 *
 * char_counts(text): the characters of a str with their counts (the corpus's, for its required characters).
 */
#include "twins.h"
#include <stdint.h>

typedef struct {
    int32_t sid, left, right;
} Pos;

typedef struct {
    int32_t left, right; /* the symbols it joins; -1 for a character */
    int32_t off, len;    /* its piece: character ids in the pool */
    int64_t freq;
    Pos *pos;
    Py_ssize_t npos, cappos;
    uint8_t active, pending, recompute, cached;
    int32_t id; /* its id in the model: a character's, or a merged piece's once merged; -1 before */
    PyObject *text;
} Sym;

typedef struct {
    int64_t freq;
    int32_t sym;
    int64_t push;
} Entry;

typedef struct {
    uint64_t *keys; /* 0: empty, 1: deleted */
    int32_t *vals;
    Py_ssize_t cap, used, filled;
} Map;

typedef struct {
    Sym *syms;
    Py_ssize_t nsyms, capsyms;
    int32_t *pool;
    Py_ssize_t npool, cappool;
    Entry *heap;
    Py_ssize_t nheap, capheap;
    int64_t pushes;
    int32_t *pending;
    Py_ssize_t npending, cappending;
    Map cache;  /* (left, right) -> symbol, or -2: not a valid piece */
    Map pieces; /* hash of a merged piece -> its symbol (pieces made twice are dropped) */
    int32_t *cps, *script;
    uint8_t *decimal, *space, *banned;
    int nchars;
    int flags, max_len;
    int32_t *words, *starts, *lens;
    int64_t *freqs;
    Py_ssize_t nwords;
    int64_t tokens;
} Loop;

/* -- hash maps ------------------------------------------------------------------------------------------------ */

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int map_init(Map *m, Py_ssize_t cap) {
    m->keys = PyMem_Calloc((size_t)cap, sizeof *m->keys);
    m->vals = PyMem_Malloc((size_t)cap * sizeof *m->vals);
    if (!m->keys || !m->vals) return no_memory();
    m->cap = cap;
    m->used = m->filled = 0;
    return 0;
}

static void map_free(Map *m) {
    PyMem_Free(m->keys);
    PyMem_Free(m->vals);
}

/* The slot of `key` (key >= 2), or of where it would go. */
static Py_ssize_t map_slot(const Map *m, uint64_t key) {
    Py_ssize_t mask = m->cap - 1, i = (Py_ssize_t)(mix(key) & (uint64_t)mask), tomb = -1;
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key) return i;
        if (k == 0) return tomb >= 0 ? tomb : i;
        if (k == 1 && tomb < 0) tomb = i;
        i = (i + 1) & mask;
    }
}

static int map_put(Map *m, uint64_t key, int32_t val);

static int map_grow(Map *m) {
    Map bigger;
    if (map_init(&bigger, m->used * 4 > m->cap ? m->cap * 2 : m->cap) < 0) return -1;
    for (Py_ssize_t i = 0; i < m->cap; i++)
        if (m->keys[i] > 1) map_put(&bigger, m->keys[i], m->vals[i]);
    map_free(m);
    *m = bigger;
    return 0;
}

static int map_put(Map *m, uint64_t key, int32_t val) {
    if ((m->filled + 1) * 2 > m->cap && map_grow(m) < 0) return -1;
    Py_ssize_t i = map_slot(m, key);
    if (m->keys[i] <= 1) {
        if (m->keys[i] == 0) m->filled++;
        m->used++;
        m->keys[i] = key;
    }
    m->vals[i] = val;
    return 0;
}

/* The value of `key`, or INT32_MIN. */
static int32_t map_get(const Map *m, uint64_t key) {
    Py_ssize_t i = map_slot(m, key);
    return m->keys[i] == key ? m->vals[i] : INT32_MIN;
}

static void map_del(Map *m, uint64_t key) {
    Py_ssize_t i = map_slot(m, key);
    if (m->keys[i] == key) {
        m->keys[i] = 1;
        m->used--;
    }
}

static uint64_t pair_key(int32_t a, int32_t b) { return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 2; }

static uint64_t piece_hash(const int32_t *p, int32_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < n; i++) h = (h ^ (uint64_t)(uint32_t)p[i]) * 1099511628211ULL;
    return h < 2 ? h + 2 : h;
}

/* -- symbols and pieces ----------------------------------------------------------------------------------------- */

static int piece_cmp(const Loop *L, const Sym *a, const Sym *b) {
    const int32_t *pa = L->pool + a->off, *pb = L->pool + b->off;
    int32_t n = a->len < b->len ? a->len : b->len;
    for (int32_t i = 0; i < n; i++) {
        int32_t x = L->cps[pa[i]], y = L->cps[pb[i]];
        if (x != y) return x < y ? -1 : 1;
    }
    return a->len < b->len ? -1 : a->len > b->len;
}

#define PIECE_CHARS Loop
#define PIECE_BANNED(L, c) ((L)->banned[c])
#define PIECE_SPACE(L, c) ((L)->space[c])
#define PIECE_DECIMAL(L, c) ((L)->decimal[c])
#define PIECE_SCRIPT(L, c) ((L)->script[c])
#include "piece_rules.h"

/* Whether a piece of these characters may be made (sentencepiece's IsValidSentencePiece). */
static int valid_piece(const Loop *L, const int32_t *p, int32_t n) { return piece_allowed(L, p, n, L->flags, L->max_len); }

static int32_t new_symbol(Loop *L, int32_t left, int32_t right, const int32_t *piece, int32_t len) {
    if (GROW(L->syms, L->capsyms, L->nsyms + 1, 1024) < 0 || GROW(L->pool, L->cappool, L->npool + len, 4096) < 0)
        return -1;
    Sym *s = &L->syms[L->nsyms];
    memset(s, 0, sizeof *s);
    s->left = left;
    s->right = right;
    s->off = (int32_t)L->npool;
    s->len = len;
    s->active = 1;
    s->recompute = 1;
    s->id = -1;
    memcpy(L->pool + L->npool, piece, (size_t)len * sizeof *piece);
    L->npool += len;
    return (int32_t)L->nsyms++;
}

/* The candidate symbol of the pair (a, b): -2 when they may not form a piece, -1 on error. */
static int32_t pair_symbol(Loop *L, int32_t a, int32_t b) {
    if (a < 0 || b < 0 || a == 0 || b == 0) return -2;
    uint64_t key = pair_key(a, b);
    int32_t found = map_get(&L->cache, key);
    if (found != INT32_MIN) return found;
    Sym *sa = &L->syms[a], *sb = &L->syms[b];
    int32_t len = sa->len + sb->len;
    int32_t stackbuf[64], *buf = stackbuf;
    if (len > 64 && !(buf = PyMem_Malloc((size_t)len * sizeof *buf))) return no_memory();
    memcpy(buf, L->pool + sa->off, (size_t)sa->len * sizeof *buf);
    memcpy(buf + sa->len, L->pool + sb->off, (size_t)sb->len * sizeof *buf);
    int32_t id = -2;
    if (valid_piece(L, buf, len)) id = new_symbol(L, a, b, buf, len);
    if (buf != stackbuf) PyMem_Free(buf);
    if (id == -1) return -1;
    if (id >= 0) L->syms[id].cached = 1;
    if (map_put(&L->cache, key, id) < 0) return -1;
    return id;
}

/* -- the queue ------------------------------------------------------------------------------------------------ */

static int better(const Loop *L, const Entry *a, const Entry *b) {
    if (a->freq != b->freq) return a->freq > b->freq;
    const Sym *sa = &L->syms[a->sym], *sb = &L->syms[b->sym];
    if (sa->len != sb->len) return sa->len < sb->len;
    if (a->sym != b->sym) {
        int c = piece_cmp(L, sa, sb);
        if (c) return c < 0;
        return a->sym < b->sym;
    }
    return a->push < b->push;
}

static int push(Loop *L, int32_t sym) {
    if (GROW(L->heap, L->capheap, L->nheap + 1, 1024) < 0) return -1;
    Entry e = {L->syms[sym].freq, sym, L->pushes++};
    Py_ssize_t i = L->nheap++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!better(L, &e, &L->heap[parent])) break;
        L->heap[i] = L->heap[parent];
        i = parent;
    }
    L->heap[i] = e;
    return 0;
}

static void pop(Loop *L) {
    Entry last = L->heap[--L->nheap];
    Py_ssize_t n = L->nheap, i = 0;
    if (n == 0) return;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && better(L, &L->heap[child + 1], &L->heap[child])) child++;
        if (!better(L, &L->heap[child], &last)) break;
        L->heap[i] = L->heap[child];
        i = child;
    }
    L->heap[i] = last;
}

static void drop_positions(Sym *s) {
    PyMem_Free(s->pos);
    s->pos = NULL;
    s->npos = s->cappos = 0;
}

static int flush(Loop *L) {
    for (Py_ssize_t i = 0; i < L->npending; i++) {
        Sym *s = &L->syms[L->pending[i]];
        s->pending = 0;
        if (s->active) {
            s->recompute = 0;
            if (s->freq == 0) drop_positions(s);
            if (push(L, L->pending[i]) < 0) return -1;
        }
    }
    L->npending = 0;
    return 0;
}

static int mark(Loop *L, int32_t sym) {
    Sym *s = &L->syms[sym];
    if (s->pending) return 0;
    if (GROW(L->pending, L->cappending, L->npending + 1, 256) < 0) return -1;
    s->pending = 1;
    L->pending[L->npending++] = sym;
    return 0;
}

/* The best candidate left in the queue (stale entries dropped or re-queued on the way), or -1; -2 on error. */
static int32_t pop_valid(Loop *L) {
    while (L->nheap) {
        Entry top = L->heap[0];
        Sym *s = &L->syms[top.sym];
        pop(L);
        if (!s->active) continue;
        if (s->recompute) {
            s->recompute = 0;
            if (s->freq == 0) drop_positions(s);
            if (push(L, top.sym) < 0) return -2;
            continue;
        }
        if (top.freq != s->freq) continue;
        return top.sym;
    }
    return -1;
}

static void drop(Loop *L, int32_t sym) {
    Sym *s = &L->syms[sym];
    if (s->cached) map_del(&L->cache, pair_key(s->left, s->right));
    s->cached = 0;
    s->active = 0;
    drop_positions(s);
}

static int made_before(Loop *L, int32_t sym) {
    Sym *s = &L->syms[sym];
    uint64_t h = piece_hash(L->pool + s->off, s->len);
    for (;;) { /* open addressing on the hash itself: equal hashes of different pieces probe on */
        int32_t other = map_get(&L->pieces, h);
        if (other == INT32_MIN) return 0;
        Sym *o = &L->syms[other];
        if (o->len == s->len && !memcmp(L->pool + o->off, L->pool + s->off, (size_t)s->len * sizeof(int32_t)))
            return 1;
        h = h + 0x9e3779b97f4a7c15ULL;
        if (h < 2) h += 2;
    }
}

static int remember(Loop *L, int32_t sym) {
    Sym *s = &L->syms[sym];
    uint64_t h = piece_hash(L->pool + s->off, s->len);
    while (map_get(&L->pieces, h) != INT32_MIN) {
        h = h + 0x9e3779b97f4a7c15ULL;
        if (h < 2) h += 2;
    }
    return map_put(&L->pieces, h, sym);
}

/* -- one merge ---------------------------------------------------------------------------------------------------- */

static int add_position(Loop *L, int32_t sym, int32_t sid, int32_t left, int32_t right, int64_t f) {
    Sym *s = &L->syms[sym];
    if (GROW(s->pos, s->cappos, s->npos + 1, 4) < 0) return -1;
    s->pos[s->npos++] = (Pos){sid, left, right};
    s->freq += f;
    return mark(L, sym);
}

static int32_t neighbour(const int32_t *w, int32_t n, int32_t i, int step) {
    for (i += step; i >= 0 && i < n; i += step)
        if (w[i] >= 0) return i;
    return -1;
}

static int accept(Loop *L, int32_t best, int64_t *replaced) {
    *replaced = 0;
    int32_t bl = L->syms[best].left, br = L->syms[best].right;
    Py_ssize_t npos = L->syms[best].npos;
    for (Py_ssize_t k = 0; k < npos; k++) {
        Pos p = L->syms[best].pos[k]; /* re-read: the symbol array may move as symbols are made */
        int32_t *w = L->words + L->starts[p.sid];
        int32_t n = L->lens[p.sid];
        if (w[p.left] != bl || w[p.right] != br) continue;
        int64_t f = L->freqs[p.sid];
        int32_t next = neighbour(w, n, p.right, 1), prev = neighbour(w, n, p.left, -1);
        if (prev >= 0) {
            int32_t s = pair_symbol(L, w[prev], w[p.left]);
            if (s == -1) return -1;
            if (s >= 0 && s != best) {
                L->syms[s].freq -= f;
                L->syms[s].recompute = 1;
            }
        }
        if (next >= 0) {
            int32_t s = pair_symbol(L, w[p.right], w[next]);
            if (s == -1) return -1;
            if (s >= 0 && s != best) {
                L->syms[s].freq -= f;
                L->syms[s].recompute = 1;
            }
        }
        w[p.left] = best;
        w[p.right] = -1;
        *replaced += f;
        if (prev >= 0) {
            int32_t s = pair_symbol(L, w[prev], best);
            if (s == -1 || (s >= 0 && add_position(L, s, p.sid, prev, p.left, f) < 0)) return -1;
        }
        if (next >= 0) {
            int32_t s = pair_symbol(L, best, w[next]);
            if (s == -1 || (s >= 0 && add_position(L, s, p.sid, p.left, next, f) < 0)) return -1;
        }
    }
    drop(L, best);
    L->tokens -= *replaced;
    return flush(L);
}

/* -- Python ----------------------------------------------------------------------------------------------------- */

static PyObject *text_of(Loop *L, int32_t sym) {
    Sym *s = &L->syms[sym];
    if (!s->text) {
        Py_UCS4 stackbuf[64], *buf = stackbuf;
        if (s->len > 64 && !(buf = PyMem_Malloc((size_t)s->len * sizeof *buf))) return PyErr_NoMemory();
        for (int32_t i = 0; i < s->len; i++) buf[i] = (Py_UCS4)L->cps[L->pool[s->off + i]];
        s->text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, s->len);
        if (buf != stackbuf) PyMem_Free(buf);
    }
    return s->text;
}

static void loop_free(Loop *L) {
    for (Py_ssize_t i = 0; i < L->nsyms; i++) {
        PyMem_Free(L->syms[i].pos);
        Py_XDECREF(L->syms[i].text);
    }
    PyMem_Free(L->syms);
    PyMem_Free(L->pool);
    PyMem_Free(L->heap);
    PyMem_Free(L->pending);
    map_free(&L->cache);
    map_free(&L->pieces);
    PyMem_Free(L->script);
    PyMem_Free(L->decimal);
    PyMem_Free(L->space);
    PyMem_Free(L->banned);
    PyMem_Free(L->starts);
}

static int script_lookup(const int32_t *t, Py_ssize_t n, int32_t cp) {
    Py_ssize_t lo = 0, hi = n; /* triples */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (t[3 * mid] <= cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return 0;
    lo--;
    return cp <= t[3 * lo + 1] ? t[3 * lo + 2] : 0;
}

static int setup_chars(Loop *L, Py_buffer *cps, Py_buffer *scripts) {
    L->nchars = (int)(cps->len / 4);
    L->cps = cps->buf;
    const int32_t *t = scripts->buf;
    Py_ssize_t ntrip = (scripts->len / 4 - 4) / 3;
    int32_t hira = t[0], kata = t[1], han = t[2], inherited = t[3];
    L->script = PyMem_Malloc((size_t)L->nchars * sizeof *L->script);
    L->decimal = PyMem_Calloc((size_t)L->nchars, 1);
    L->space = PyMem_Calloc((size_t)L->nchars, 1);
    L->banned = PyMem_Calloc((size_t)L->nchars, 1);
    if (!L->script || !L->decimal || !L->space || !L->banned) return no_memory();
    for (int i = 0; i < L->nchars; i++) {
        int32_t cp = L->cps[i];
        int32_t s = script_lookup(t + 4, ntrip, cp);
        if (s == hira || s == kata || cp == 0x30FC) s = han;
        else if (s == inherited) s = INT32_MAX;
        L->script[i] = s;
        L->decimal[i] = (cp >= 0x30 && cp <= 0x39) || (cp >= 0xFF10 && cp <= 0xFF19);
        L->space[i] = cp == 0x2581;
        L->banned[i] = cp == 0x2585 || cp == 0 || cp == 0x1F || cp == 0x20 || (cp >= 0xD800 && cp < 0xE000) ||
                       cp > 0x10FFFF;
    }
    return 0;
}

static int init_words(Loop *L) {
    L->starts = PyMem_Malloc((size_t)(L->nwords + 1) * sizeof *L->starts);
    if (!L->starts) return no_memory();
    int64_t tokens = 0;
    int32_t at = 0;
    for (Py_ssize_t i = 0; i < L->nwords; i++) {
        L->starts[i] = at;
        at += L->lens[i];
        tokens += (int64_t)L->lens[i] * L->freqs[i];
    }
    L->tokens = tokens;
    for (int i = 0; i < L->nchars; i++) {
        int32_t piece = i;
        if (new_symbol(L, -1, -1, &piece, 1) < 0) return -1;
    }
    /* every pair of neighbours, in order: its candidate's positions are then in corpus order */
    for (Py_ssize_t sid = 0; sid < L->nwords; sid++) {
        int32_t *w = L->words + L->starts[sid];
        for (int32_t i = 1; i < L->lens[sid]; i++) {
            int32_t s = pair_symbol(L, w[i - 1], w[i]);
            if (s == -1) return -1;
            if (s >= 0 && add_position(L, s, (int32_t)sid, i - 1, i, L->freqs[sid]) < 0) return -1;
        }
    }
    return flush(L);
}

/* Appends `n` int64 values to a growable buffer of them. */
static int put_i64(int64_t **buf, Py_ssize_t *len, Py_ssize_t *cap, const int64_t *vals, Py_ssize_t n) {
    if (GROW(*buf, *cap, *len + n, 4096) < 0) return -1;
    memcpy(*buf + *len, vals, (size_t)n * sizeof **buf);
    *len += n;
    return 0;
}

static PyObject *bpe_train(PyObject *self, PyObject *args) {
    Py_buffer words, lens, freqs, cps, scripts, char_ids, merge_ids;
    int flags, max_len, top_k;
    Py_ssize_t n_merges;
    PyObject *progress, *should_stop;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*iiniy*y*OO", &words, &lens, &freqs, &cps, &scripts, &flags, &max_len,
                          &n_merges, &top_k, &char_ids, &merge_ids, &progress, &should_stop))
        return NULL;
    Loop L;
    memset(&L, 0, sizeof L);
    PyObject *pieces = NULL, *result = NULL;
    int32_t *top = NULL;
    int64_t *topf = NULL, *rows = NULL, *tops = NULL;
    Py_ssize_t nrows = 0, caprows = 0, ntops = 0, captops = 0, done_merges = 0;
    const int32_t *cids = char_ids.buf, *mids = merge_ids.buf;
    Py_ssize_t ncopy = words.len / 4;
    if (top_k < 1) top_k = 1;
    if (merge_ids.len / 4 < n_merges) {
        raise_error(PyExc_ValueError, "merge_ids must give an id to every merge asked for");
        goto done;
    }
    L.words = PyMem_Malloc((size_t)(ncopy ? ncopy : 1) * sizeof *L.words);
    top = PyMem_Malloc((size_t)top_k * sizeof *top);
    topf = PyMem_Malloc((size_t)top_k * sizeof *topf);
    if (!L.words || !top || !topf) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(L.words, words.buf, (size_t)ncopy * sizeof *L.words);
    L.lens = lens.buf;
    L.freqs = freqs.buf;
    L.nwords = lens.len / 4;
    L.flags = flags;
    L.max_len = max_len;
    if (map_init(&L.cache, 1 << 16) < 0 || map_init(&L.pieces, 1 << 12) < 0 || setup_chars(&L, &cps, &scripts) < 0 ||
        init_words(&L) < 0)
        goto done;
    if (char_ids.len / 4 < L.nchars) {
        raise_error(PyExc_ValueError, "char_ids must give an id to every character");
        goto done;
    }
    for (int i = 0; i < L.nchars; i++) L.syms[i].id = cids[i];
    int64_t initial = L.tokens;
    pieces = PyList_New(0);
    if (!pieces) goto done;
    while (done_merges < n_merges) {
        if (done_merges % 256 == 0 && should_stop != Py_None) {
            PyObject *r = PyObject_CallNoArgs(should_stop);
            if (!r) goto done;
            int stop = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (stop < 0) goto done;
            if (stop) {
                result = Py_NewRef(Py_None);
                goto done;
            }
        }
        int32_t best;
        for (;;) {
            best = pop_valid(&L);
            if (best < 0 || !made_before(&L, best)) break;
            drop(&L, best);
        }
        if (best == -2) goto done;
        if (best == -1) break;
        int n = 0;
        top[n] = best;
        topf[n++] = L.syms[best].freq;
        while (n < top_k) {
            int32_t t = pop_valid(&L);
            if (t == -2) goto done;
            if (t == -1) break;
            if (made_before(&L, t)) {
                drop(&L, t);
                continue;
            }
            top[n] = t;
            topf[n++] = L.syms[t].freq;
        }
        for (int i = 1; i < n; i++)
            if (push(&L, top[i]) < 0) goto done;
        for (int i = 0; i < top_k; i++) {
            int64_t row[3] = {-1, -1, -1};
            if (i < n) {
                row[0] = L.syms[L.syms[top[i]].left].id;
                row[1] = L.syms[L.syms[top[i]].right].id;
                row[2] = topf[i];
            }
            if (put_i64(&tops, &ntops, &captops, row, 3) < 0) goto done;
        }
        int64_t count = L.syms[best].freq, replaced;
        int32_t bl = L.syms[best].left, br = L.syms[best].right;
        L.syms[best].id = mids[done_merges];
        PyObject *text = text_of(&L, best);
        if (!text || PyList_Append(pieces, text) < 0) goto done;
        if (remember(&L, best) < 0 || accept(&L, best, &replaced) < 0) goto done;
        int64_t row[5] = {L.syms[bl].id, L.syms[br].id, count, replaced, L.tokens};
        if (put_i64(&rows, &nrows, &caprows, row, 5) < 0) goto done;
        done_merges++;
        if (progress != Py_None && done_merges % 256 == 0) {
            PyObject *ok = PyObject_CallFunction(progress, "n", done_merges);
            if (!ok) goto done;
            Py_DECREF(ok);
        }
    }
    result = Py_BuildValue("(Ny#y#L)", pieces, rows ? (const char *)rows : "", nrows * (Py_ssize_t)sizeof *rows,
                           tops ? (const char *)tops : "", ntops * (Py_ssize_t)sizeof *tops, (long long)initial);
    pieces = NULL;
done:
    Py_XDECREF(pieces);
    PyMem_Free(top);
    PyMem_Free(topf);
    PyMem_Free(rows);
    PyMem_Free(tops);
    loop_free(&L);
    PyMem_Free(L.words);
    PyBuffer_Release(&words);
    PyBuffer_Release(&lens);
    PyBuffer_Release(&freqs);
    PyBuffer_Release(&cps);
    PyBuffer_Release(&scripts);
    PyBuffer_Release(&char_ids);
    PyBuffer_Release(&merge_ids);
    return result;
}

/* char_counts(text) -> {character: count}: every character of `text` with how often it occurs (what
 * collections.Counter(text) gives, for the corpus's required characters: training_corpus.load_sentences). */
static PyObject *char_counts(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) return PyErr_Format(PyExc_TypeError, "char_counts takes a str");
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    Py_UCS4 top = PyUnicode_MAX_CHAR_VALUE(arg);
    uint32_t *counts = PyMem_Calloc((size_t)top + 1, sizeof *counts);
    if (!counts) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) counts[PyUnicode_READ(kind, data, i)]++;
    PyObject *out = PyDict_New();
    for (Py_UCS4 c = 0; out && c <= top; c++) {
        if (!counts[c]) continue;
        PyObject *key = PyUnicode_FromOrdinal((int)c), *value = key ? PyLong_FromUnsignedLong(counts[c]) : NULL;
        if (!value || PyDict_SetItem(out, key, value) < 0) Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    PyMem_Free(counts);
    return out;
}

static PyMethodDef methods[] = {
    {"bpe_train", bpe_train, METH_VARARGS, "sentencepiece's BPE merge loop (see bpe_trainer.py)."},
    {"char_counts", char_counts, METH_O, "every character of a str with its count"},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE(_spm_train, NULL, methods)
