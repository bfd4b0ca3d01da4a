/* The compiled twins of app/engines/bpe/encoder.py's loop over pre-tokens and of patterns.py's split by the three
 * shipped OpenAI patterns.
 *
 *   encode(pieces, cache, whole, merge, merge_args, cache_chars, cache_limit) -> list[int]
 *     pieces       a list of str (the pre-tokens, in order)
 *     cache        a dict: pre-token -> tuple of its ids; read, and filled with the pre-tokens seen here of at most
 *                  cache_chars characters (cleared first when it holds cache_limit entries)
 *     whole        a mapping (a dict, or a table file's FrozenMap): bytes -> id, or None: a pre-token whose bytes are a key is that one id
 *     merge        a callable: merge(bytes, *merge_args) -> list of ids (the merge loop: _merge.c's, or
 *                  bpe/encoder.py's merge_piece)
 *
 *   Split(pattern, index, blocks)(text) -> list[str]
 *     pattern      0: GPT2_PATTERN (gpt2, p50k), 1: CL100K_PATTERN, 2: O200K_PATTERN
 *     index        bytes: 0x1100 uint16, the block of each 256 code points (native byte order)
 *     blocks       bytes: 256-byte blocks, a code point's classes as tiktoken sees them (F_* below)
 *
 * encode gives exactly what RankEncoder.encode_pretokens gives in Python; on a text of many distinct pre-tokens
 * (Japanese clauses, C identifiers) the Python loop spent more time calling its way to the merge than merging.
 * The ranks are not read here: whole and merge are what the encoder hands over, whatever they are.
 *
 * Split gives exactly what the pattern gives run by a backtracking regex engine with tiktoken's classes
 * (patterns.exact(pattern).findall; tests/engines/test_bpe_encoder.py compares them on random and real text): each
 * alternative of the pattern is written below as the match the engine finds, first alternative first. The ``re``
 * module spent some 200 ns on each match (o200k's pattern more), as much as the rest of an encode.
 */
#include "twins.h"
#include <stdint.h>

#define MOST_MERGE_ARGS 8

/* The ids of a pre-token not in the cache: a new tuple, or NULL with an error set. */
static PyObject *first_sight(PyObject *piece, PyObject *whole, PyObject *merge, PyObject *merge_args) {
    PyObject *data = PyUnicode_AsUTF8String(piece);
    if (!data) return NULL;
    PyObject *ids = NULL;
    if (whole != Py_None) {
        PyObject *id;
        if (PyDict_CheckExact(whole)) {
            id = Py_XNewRef(PyDict_GetItemWithError(whole, data));
        } else { /* another mapping (a table file's FrozenMap): a missing key raises KeyError */
            id = PyObject_GetItem(whole, data);
            if (!id && PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
        }
        if (id) {
            ids = PyTuple_Pack(1, id);
            Py_DECREF(id);
            Py_DECREF(data);
            return ids;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(data);
            return NULL;
        }
    }
    PyObject *args[1 + MOST_MERGE_ARGS] = {data};
    Py_ssize_t n_args = PyTuple_GET_SIZE(merge_args);
    for (Py_ssize_t k = 0; k < n_args; k++) args[1 + k] = PyTuple_GET_ITEM(merge_args, k);
    PyObject *merged = PyObject_Vectorcall(merge, args, 1 + n_args, NULL);
    Py_DECREF(data);
    if (!merged) return NULL;
    ids = PySequence_Tuple(merged);
    Py_DECREF(merged);
    return ids;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    PyObject *pieces, *cache, *whole, *merge, *merge_args;
    Py_ssize_t cache_chars, cache_limit;
    if (!PyArg_ParseTuple(args, "O!O!OOO!nn", &PyList_Type, &pieces, &PyDict_Type, &cache, &whole, &merge,
                          &PyTuple_Type, &merge_args, &cache_chars, &cache_limit))
        return NULL;
    if (whole != Py_None && !PyMapping_Check(whole))
        return raise_error(PyExc_TypeError, "encode(): whole must be a mapping or None"), NULL;
    if (PyTuple_GET_SIZE(merge_args) > MOST_MERGE_ARGS)
        return raise_error(PyExc_ValueError, "encode(): at most 8 merge_args"), NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(pieces); k++) {
        PyObject *piece = PyList_GET_ITEM(pieces, k);
        if (!PyUnicode_Check(piece)) {
            PyErr_SetString(PyExc_TypeError, "encode(): pieces must be str");
            goto fail;
        }
        Py_INCREF(piece); /* the list may change under a call to merge */
        PyObject *ids = PyDict_GetItemWithError(cache, piece);
        if (ids) {
            Py_INCREF(ids);
        } else if (!PyErr_Occurred() && (ids = first_sight(piece, whole, merge, merge_args)) != NULL &&
                   PyUnicode_GET_LENGTH(piece) <= cache_chars) {
            if (PyDict_GET_SIZE(cache) >= cache_limit) PyDict_Clear(cache);
            if (PyDict_SetItem(cache, piece, ids) < 0) Py_CLEAR(ids);
        }
        Py_DECREF(piece);
        if (!ids) goto fail;
        Py_ssize_t n = PyList_GET_SIZE(out);
        int failed = PyList_SetSlice(out, n, n, ids) < 0; /* out += ids */
        Py_DECREF(ids);
        if (failed) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* -- Split ------------------------------------------------------------------------------------------------------- */

/* A code point's classes, as tiktoken's tables give them (one general category, and white space or not). */
enum { F_LU = 1, F_LL = 2, F_LT = 4, F_LM = 8, F_LO = 16, F_M = 32, F_N = 64, F_WS = 128 };
#define F_L (F_LU | F_LL | F_LT | F_LM | F_LO)
#define F_UPPER (F_LU | F_LT | F_LM | F_LO | F_M) /* o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
#define F_LOWER (F_LL | F_LM | F_LO | F_M)        /* o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}] */
#define N_BLOCKS_INDEX 0x1100                   /* 0x110000 code points, 256 a block */

enum { GPT2, CL100K, O200K };

typedef struct {
    PyObject_HEAD
    int pattern;
    PyObject *index, *blocks; /* held: the tables below point into them */
    const uint16_t *block_of;
    const uint8_t *classes;
} Split;

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    const Split *split;
} Text;

static inline Py_UCS4 char_at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }

static inline unsigned classes_at(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = char_at(t, i);
    return t->split->classes[(size_t)t->split->block_of[c >> 8] << 8 | (c & 255)];
}

/* The end of the run from i of characters in any of the classes `mask`. */
static Py_ssize_t run_of(const Text *t, Py_ssize_t i, unsigned mask) {
    while (i < t->n && (classes_at(t, i) & mask)) i++;
    return i;
}

/* [^\s\p{L}\p{N}]: neither white space, nor letter, nor number. */
static inline int other(unsigned classes) { return !(classes & (F_WS | F_L | F_N)); }

static Py_ssize_t run_of_other(const Text *t, Py_ssize_t i) {
    while (i < t->n && other(classes_at(t, i))) i++;
    return i;
}

static inline int newline(Py_UCS4 c) { return c == '\r' || c == '\n'; }

/* c is the letter x (lower case), or with ignore_case one that matches it case-insensitively (the long s too). */
static inline int letter_is(Py_UCS4 c, char x, int ignore_case) {
    return c == (Py_UCS4)x || (ignore_case && (c == (Py_UCS4)(x - 32) || (x == 's' && c == 0x17F)));
}

/* The length of a contraction at i ('s 't 'd 'm, 'll 've 're), or 0. */
static Py_ssize_t contraction(const Text *t, Py_ssize_t i, int ignore_case) {
    if (i + 1 >= t->n || char_at(t, i) != '\'') return 0;
    Py_UCS4 a = char_at(t, i + 1);
    if (letter_is(a, 's', ignore_case) || letter_is(a, 'd', ignore_case) || letter_is(a, 'm', ignore_case) ||
        letter_is(a, 't', ignore_case))
        return 2;
    if (i + 2 >= t->n) return 0;
    Py_UCS4 b = char_at(t, i + 2);
    if ((letter_is(a, 'l', ignore_case) && letter_is(b, 'l', ignore_case)) ||
        ((letter_is(a, 'v', ignore_case) || letter_is(a, 'r', ignore_case)) && letter_is(b, 'e', ignore_case)))
        return 3;
    return 0;
}

/* The white-space alternatives: `\s++$` (gpt2, cl100k), `\s*[\r\n]` (cl100k) or `\s*[\r\n]+` (o200k), `\s+(?!\S)`,
 * then `\s` (gpt2, cl100k) or `\s+` (o200k). t[i] is white space. */
static Py_ssize_t space_match(const Text *t, Py_ssize_t i, int pattern) {
    Py_ssize_t k = run_of(t, i, F_WS);
    if (k == t->n && pattern != O200K) return k;
    if (pattern != GPT2) /* the last \r or \n of the run ends the match */
        for (Py_ssize_t q = k - 1; q >= i; q--)
            if (newline(char_at(t, q))) return q + 1;
    if (k == t->n) return k;          /* (?!\S) holds at the end */
    if (k - i >= 2) return k - 1;     /* the last space stays for the word after it */
    return pattern == O200K ? k : i + 1;
}

/* ' ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++' and the rest of GPT2_PATTERN. */
static Py_ssize_t gpt2_match(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = char_at(t, i);
    Py_ssize_t k = c == '\'' ? contraction(t, i, 0) : 0;
    if (k) return i + k;
    Py_ssize_t j = c == ' ' && i + 1 < t->n ? i + 1 : i;
    unsigned f = classes_at(t, j);
    if (f & F_L) return run_of(t, j, F_L);
    if (f & F_N) return run_of(t, j, F_N);
    if (other(f)) return run_of_other(t, j);
    return space_match(t, i, GPT2);
}

static Py_ssize_t cl100k_match(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = char_at(t, i);
    unsigned f = classes_at(t, i);
    Py_ssize_t k = c == '\'' ? contraction(t, i, 1) : 0;
    if (k) return i + k;
    if (f & F_L) return run_of(t, i, F_L); /* [^\r\n\p{L}\p{N}]?+\p{L}++ */
    if (!(f & F_N) && !newline(c) && i + 1 < t->n && (classes_at(t, i + 1) & F_L)) return run_of(t, i + 1, F_L);
    if (f & F_N) { /* \p{N}{1,3}+ */
        Py_ssize_t e = i + 1;
        while (e < t->n && e < i + 3 && (classes_at(t, e) & F_N)) e++;
        return e;
    }
    Py_ssize_t j = c == ' ' && i + 1 < t->n && other(classes_at(t, i + 1)) ? i + 1 : i;
    if (other(classes_at(t, j))) { /* ' ?[^\s\p{L}\p{N}]++[\r\n]*+' */
        Py_ssize_t e = run_of_other(t, j);
        while (e < t->n && newline(char_at(t, e))) e++;
        return e;
    }
    return space_match(t, i, CL100K);
}

/* o200k's first alternative from j (after the optional prefix): [upper]*[lower]+, the contraction; -1 if none. */
static Py_ssize_t o200k_lower_word(const Text *t, Py_ssize_t j) {
    Py_ssize_t u = run_of(t, j, F_UPPER), e;
    if (u < t->n && (classes_at(t, u) & F_LL)) {
        e = run_of(t, u, F_LOWER);
    } else { /* [upper]* gives back up to the last character that is also [lower] (Lm, Lo, M) */
        Py_ssize_t p = u - 1;
        while (p >= j && !(classes_at(t, p) & F_LOWER)) p--;
        if (p < j) return -1;
        e = p + 1;
    }
    return e + contraction(t, e, 1);
}

/* o200k's second alternative from j: [upper]+[lower]*, the contraction; -1 if none. */
static Py_ssize_t o200k_upper_word(const Text *t, Py_ssize_t j) {
    if (j >= t->n || !(classes_at(t, j) & F_UPPER)) return -1;
    Py_ssize_t e = run_of(t, run_of(t, j, F_UPPER), F_LOWER);
    return e + contraction(t, e, 1);
}

static Py_ssize_t o200k_match(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = char_at(t, i);
    unsigned f = classes_at(t, i);
    int prefix = !(f & (F_L | F_N)) && !newline(c); /* [^\r\n\p{L}\p{N}]? takes it: tried first */
    Py_ssize_t e;
    if ((prefix && (e = o200k_lower_word(t, i + 1)) >= 0) || (e = o200k_lower_word(t, i)) >= 0) return e;
    if ((prefix && (e = o200k_upper_word(t, i + 1)) >= 0) || (e = o200k_upper_word(t, i)) >= 0) return e;
    if (f & F_N) { /* \p{N}{1,3} */
        e = i + 1;
        while (e < t->n && e < i + 3 && (classes_at(t, e) & F_N)) e++;
        return e;
    }
    Py_ssize_t j = c == ' ' && i + 1 < t->n && other(classes_at(t, i + 1)) ? i + 1 : i;
    if (other(classes_at(t, j))) { /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
        e = run_of_other(t, j);
        while (e < t->n && (newline(char_at(t, e)) || char_at(t, e) == '/')) e++;
        return e;
    }
    return space_match(t, i, O200K);
}

static PyObject *split_call(Split *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"text", NULL};
    PyObject *text;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U:Split", names, &text)) return NULL;
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), self};
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < t.n;) {
        Py_ssize_t e = self->pattern == O200K ? o200k_match(&t, i) : self->pattern == CL100K ? cl100k_match(&t, i)
                                                                                             : gpt2_match(&t, i);
        PyObject *piece = PyUnicode_Substring(text, i, e);
        if (!piece || PyList_Append(out, piece) < 0) Py_CLEAR(out);
        Py_XDECREF(piece);
        i = e;
    }
    return out;
}

static int split_init(Split *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"pattern", "index", "blocks", NULL};
    int pattern;
    PyObject *index, *blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iSS", names, &pattern, &index, &blocks)) return -1;
    if (pattern < GPT2 || pattern > O200K) return raise_error(PyExc_ValueError, "Split(): pattern must be 0, 1 or 2");
    Py_ssize_t n_blocks = PyBytes_GET_SIZE(blocks) / 256;
    const uint16_t *block_of = (const uint16_t *)PyBytes_AS_STRING(index);
    int ok = PyBytes_GET_SIZE(index) == N_BLOCKS_INDEX * (Py_ssize_t)sizeof(uint16_t) &&
             PyBytes_GET_SIZE(blocks) == n_blocks * 256;
    for (Py_ssize_t k = 0; ok && k < N_BLOCKS_INDEX; k++) ok = block_of[k] < n_blocks;
    if (!ok) return raise_error(PyExc_ValueError, "Split(): index must be 0x1100 block numbers of blocks of 256 bytes");
    Py_XSETREF(self->index, Py_NewRef(index));
    Py_XSETREF(self->blocks, Py_NewRef(blocks));
    self->pattern = pattern;
    self->block_of = block_of;
    self->classes = (const uint8_t *)PyBytes_AS_STRING(blocks);
    return 0;
}

static void split_dealloc(Split *self) {
    Py_XDECREF(self->index);
    Py_XDECREF(self->blocks);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject SplitType = {
    TWIN_TYPE("app.engines.bpe._pieces.Split", Split, Py_TPFLAGS_DEFAULT,
              "Split(pattern, index, blocks)(text) -> the pre-tokens of text by a shipped OpenAI pattern.", split_init,
              split_dealloc),
    .tp_call = (ternaryfunc)split_call,
};

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(pieces, cache, whole, merge, merge_args, cache_chars, cache_limit) -> the ids of the pre-tokens, read "
     "from and kept in cache"},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE_WITH_TYPES(_pieces, "The compiled twins of the byte-level encoder's split and loop over pre-tokens.",
                       methods, 1, &SplitType)
