/* The compiled twin of app/engines/sentencepiece/model.py's loop over chunks: a normalized text cut into the
 * stretches that merge on their own (SentencePieceTokenizer._chunks), and each one's ids, from the cache or, the
 * first time it is seen, from the engine.
 *
 *   Chunker(index, blocks, lookup, unk_id, byte_ids, cut, heap_from)
 *     index, blocks  a character's class: blocks[index[c >> 8] * 256 + (c & 255)] (index: 0x1100 uint16 in native
 *                    order, blocks: 256-byte blocks), one of OUT, SPACE, RUN_A, RUN_B below
 *     lookup         a mapping (a dict, or a table file's FrozenMap): piece -> id; unk_id: the id of <unk>; byte_ids: the 256 ids of <0x00> ... <0xFF>
 *     cut            a callable (PairTable.cut) cutting a chunk longer than heap_from characters, or None
 *   .chunks(text) -> list[str]: the chunks, as the engine's chunk regex finds them
 *   .encode(text, cache, encode_chunk, cache_chars, cache_limit) -> list[int]: the ids of every chunk (long ones
 *     cut first), each read from cache (chunk -> tuple of ids) or made by encode_chunk(chunk) and kept in cache
 *     when it has at most cache_chars characters (the cache cleared first when it holds more than cache_limit)
 *
 * The classes say what the regex of SentencePieceTokenizer._chunker says: a character of no multi-character piece
 * (OUT) is a chunk alone; a run of spaces (SPACE: the space symbol, when no piece has a space after another
 * character) joins the run of RUN_A or RUN_B characters after it; a run of RUN_A (or of RUN_B) characters is one
 * chunk. The tests compare the chunks with the regex's on real text and random text.
 *
 * A chunk of one character (most of a Japanese text: kanji and kana that are pieces only alone) is answered from
 * a table by code point: the piece's id, or its bytes' ids (byte fallback) when it is no piece. That is what the
 * engine gives such a chunk, as it has nothing to merge. A text of 170,000 characters is some 140,000 chunks; in
 * Python each cost a regex match, a dict lookup and a list extend, more than sentencepiece takes for the whole.
 */
#include "twins.h"
#include <stdint.h>

enum { OUT, SPACE, RUN_A, RUN_B };
#define N_BLOCKS_INDEX 0x1100 /* 0x110000 code points, 256 a block */
#define SINGLES_MOST 65536   /* single characters answered from the table; then it starts afresh */

typedef struct {
    uint32_t key; /* code point, or EMPTY */
    PyObject *ids;
} Single;

#define EMPTY UINT32_MAX

typedef struct {
    PyObject_HEAD
    PyObject *index, *blocks, *lookup, *byte_ids, *cut; /* held */
    const uint16_t *block_of;
    const uint8_t *classes;
    long unk_id;
    Py_ssize_t heap_from;
    Single *singles;
    Py_ssize_t singles_used, singles_mask;
} Chunker;

/* -- the table of single characters ----------------------------------------------------------------------------- */

static void singles_free(Chunker *c) {
    if (!c->singles) return;
    for (Py_ssize_t i = 0; i <= c->singles_mask; i++) Py_XDECREF(c->singles[i].ids);
    PyMem_Free(c->singles);
    c->singles = NULL;
    c->singles_used = 0;
}

static int singles_alloc(Chunker *c, Py_ssize_t size) {
    Single *s = PyMem_Malloc(size * sizeof(Single));
    if (!s) return no_memory();
    for (Py_ssize_t i = 0; i < size; i++) {
        s[i].key = EMPTY;
        s[i].ids = NULL;
    }
    c->singles = s;
    c->singles_mask = size - 1;
    c->singles_used = 0;
    return 0;
}

static Py_ssize_t singles_home(const Chunker *c, uint32_t key) {
    return (Py_ssize_t)((key * 0x9E3779B1u) & (uint32_t)c->singles_mask);
}

/* The slot of key: the one holding it, or the empty one where it goes. */
static Single *singles_slot(const Chunker *c, uint32_t key) {
    for (Py_ssize_t i = singles_home(c, key);; i = (i + 1) & c->singles_mask)
        if (c->singles[i].key == key || c->singles[i].key == EMPTY) return &c->singles[i];
}

/* Keep ids (a new reference, taken) for key; grown at half full, started afresh past SINGLES_MOST. */
static int singles_put(Chunker *c, uint32_t key, PyObject *ids) {
    if (c->singles_used >= SINGLES_MOST) {
        singles_free(c);
        if (singles_alloc(c, 1024) < 0) return -1;
    } else if (2 * (c->singles_used + 1) > c->singles_mask + 1) {
        Single *old = c->singles;
        Py_ssize_t old_size = c->singles_mask + 1, used = c->singles_used;
        if (singles_alloc(c, 2 * old_size) < 0) {
            c->singles = old;
            c->singles_mask = old_size - 1;
            return -1;
        }
        for (Py_ssize_t i = 0; i < old_size; i++)
            if (old[i].key != EMPTY) *singles_slot(c, old[i].key) = old[i];
        c->singles_used = used;
        PyMem_Free(old);
    }
    Single *s = singles_slot(c, key);
    s->key = key;
    s->ids = ids;
    c->singles_used++;
    return 0;
}

/* The ids of the one-character chunk ch (borrowed): its piece's id, or its bytes' ids when it has no piece. */
static PyObject *single_ids(Chunker *c, Py_UCS4 ch) {
    Single *s = singles_slot(c, ch);
    if (s->key == ch) return s->ids;
    PyObject *text = PyUnicode_FromOrdinal(ch), *ids = NULL, *owned = NULL;
    if (!text) return NULL;
    PyObject *id;
    if (PyDict_CheckExact(c->lookup)) {
        id = PyDict_GetItemWithError(c->lookup, text); /* borrowed */
    } else { /* another mapping (a table file's FrozenMap): a missing key raises KeyError */
        id = owned = PyObject_GetItem(c->lookup, text);
        if (!id && PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
    }
    long value = id ? PyLong_AsLong(id) : c->unk_id;
    if ((id && value == -1 && PyErr_Occurred()) || (!id && PyErr_Occurred())) goto done;
    if (value != c->unk_id) {
        ids = PyTuple_Pack(1, id);
    } else { /* byte fallback: the ids of its UTF-8 bytes */
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
        if (!utf8 || !(ids = PyTuple_New(size))) goto done;
        for (Py_ssize_t k = 0; k < size; k++)
            PyTuple_SET_ITEM(ids, k, Py_NewRef(PyTuple_GET_ITEM(c->byte_ids, (unsigned char)utf8[k])));
    }
    if (ids && singles_put(c, ch, ids) < 0) Py_CLEAR(ids);
done:
    Py_DECREF(text);
    Py_XDECREF(owned);
    return ids; /* the table holds it */
}

/* -- chunks ------------------------------------------------------------------------------------------------------ */

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

static inline unsigned class_of(const Chunker *c, const Text *t, Py_ssize_t i) {
    Py_UCS4 ch = PyUnicode_READ(t->kind, t->data, i);
    return c->classes[(size_t)c->block_of[ch >> 8] << 8 | (ch & 255)];
}

static Py_ssize_t run_of(const Chunker *c, const Text *t, Py_ssize_t i, unsigned cls) {
    while (i < t->n && class_of(c, t, i) == cls) i++;
    return i;
}

/* The end of the chunk that starts at i. */
static Py_ssize_t chunk_end(const Chunker *c, const Text *t, Py_ssize_t i) {
    unsigned cls = class_of(c, t, i);
    if (cls == OUT) return i + 1;
    if (cls != SPACE) return run_of(c, t, i, cls);
    Py_ssize_t k = run_of(c, t, i, SPACE);
    if (k < t->n && (cls = class_of(c, t, k)) != OUT && cls != SPACE) return run_of(c, t, k, cls);
    return k;
}

static PyObject *chunker_chunks(Chunker *c, PyObject *text) {
    if (!PyUnicode_Check(text)) return raise_error(PyExc_TypeError, "chunks(): text must be str"), NULL;
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0, e; out && i < t.n; i = e) {
        e = chunk_end(c, &t, i);
        PyObject *chunk = PyUnicode_Substring(text, i, e);
        if (!chunk || PyList_Append(out, chunk) < 0) Py_CLEAR(out);
        Py_XDECREF(chunk);
    }
    return out;
}

/* -- encode ------------------------------------------------------------------------------------------------------ */

typedef struct {
    PyObject *out, *cache, *encode_chunk;
    Py_ssize_t cache_chars, cache_limit;
} Encoding;

static int extend(PyObject *out, PyObject *ids) {
    Py_ssize_t n = PyList_GET_SIZE(out);
    return PyList_SetSlice(out, n, n, ids);
}

/* out += the ids of chunk (a str, not cut further). */
static int encode_chunk(Chunker *c, Encoding *e, PyObject *chunk) {
    Py_ssize_t size = PyUnicode_GET_LENGTH(chunk);
    if (size == 1) {
        PyObject *ids = single_ids(c, PyUnicode_READ_CHAR(chunk, 0));
        return ids ? extend(e->out, ids) : -1;
    }
    PyObject *ids = PyDict_GetItemWithError(e->cache, chunk);
    if (ids) return extend(e->out, ids);
    if (PyErr_Occurred()) return -1;
    PyObject *made = PyObject_CallOneArg(e->encode_chunk, chunk);
    ids = made ? PySequence_Tuple(made) : NULL;
    Py_XDECREF(made);
    if (!ids) return -1;
    int failed = 0;
    if (size <= e->cache_chars) {
        if (PyDict_GET_SIZE(e->cache) > e->cache_limit) PyDict_Clear(e->cache);
        failed = PyDict_SetItem(e->cache, chunk, ids) < 0;
    }
    failed = failed || extend(e->out, ids) < 0;
    Py_DECREF(ids);
    return failed ? -1 : 0;
}

static PyObject *chunker_encode(Chunker *c, PyObject *args) {
    PyObject *text;
    Encoding e = {NULL};
    if (!PyArg_ParseTuple(args, "UO!Onn:encode", &text, &PyDict_Type, &e.cache, &e.encode_chunk, &e.cache_chars,
                          &e.cache_limit))
        return NULL;
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    e.out = PyList_New(0);
    for (Py_ssize_t i = 0, end; e.out && i < t.n; i = end) {
        end = chunk_end(c, &t, i);
        int failed;
        if (end - i == 1) {
            PyObject *ids = single_ids(c, PyUnicode_READ(t.kind, t.data, i));
            failed = !ids || extend(e.out, ids) < 0;
        } else {
            PyObject *chunk = PyUnicode_Substring(text, i, end);
            if (chunk && end - i > c->heap_from && c->cut != Py_None) { /* a long chunk: cut it further */
                PyObject *parts = PyObject_CallOneArg(c->cut, chunk);
                PyObject *seq = parts ? PySequence_Fast(parts, "cut() must give a sequence") : NULL;
                failed = !seq;
                for (Py_ssize_t k = 0; seq && !failed && k < PySequence_Fast_GET_SIZE(seq); k++) {
                    PyObject *part = PySequence_Fast_GET_ITEM(seq, k);
                    failed = !PyUnicode_Check(part) ? raise_error(PyExc_TypeError, "cut() must give str") < 0
                                                    : encode_chunk(c, &e, part) < 0;
                }
                Py_XDECREF(seq);
                Py_XDECREF(parts);
            } else {
                failed = !chunk || encode_chunk(c, &e, chunk) < 0;
            }
            Py_XDECREF(chunk);
        }
        if (failed) Py_CLEAR(e.out);
    }
    return e.out;
}

/* -- the type ---------------------------------------------------------------------------------------------------- */

static int chunker_init(Chunker *c, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"index", "blocks", "lookup", "unk_id", "byte_ids", "cut", "heap_from", NULL};
    PyObject *index, *blocks, *lookup, *byte_ids, *cut;
    long unk_id;
    Py_ssize_t heap_from;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "SSOlO!On", names, &index, &blocks, &lookup,
                                     &unk_id, &PyTuple_Type, &byte_ids, &cut, &heap_from))
        return -1;
    if (!PyMapping_Check(lookup)) return raise_error(PyExc_TypeError, "Chunker(): lookup must be a mapping");
    Py_ssize_t n_blocks = PyBytes_GET_SIZE(blocks) / 256;
    const uint16_t *block_of = (const uint16_t *)PyBytes_AS_STRING(index);
    const uint8_t *classes = (const uint8_t *)PyBytes_AS_STRING(blocks);
    int ok = PyBytes_GET_SIZE(index) == N_BLOCKS_INDEX * (Py_ssize_t)sizeof(uint16_t) &&
             PyBytes_GET_SIZE(blocks) == n_blocks * 256 && PyTuple_GET_SIZE(byte_ids) == 256;
    for (Py_ssize_t k = 0; ok && k < N_BLOCKS_INDEX; k++) ok = block_of[k] < n_blocks;
    for (Py_ssize_t k = 0; ok && k < n_blocks * 256; k++) ok = classes[k] <= RUN_B;
    if (!ok)
        return raise_error(PyExc_ValueError,
                           "Chunker(): index must be 0x1100 block numbers of blocks of 256 classes (0-3), byte_ids 256 ids");
    singles_free(c);
    if (singles_alloc(c, 1024) < 0) return -1;
    Py_XSETREF(c->index, Py_NewRef(index));
    Py_XSETREF(c->blocks, Py_NewRef(blocks));
    Py_XSETREF(c->lookup, Py_NewRef(lookup));
    Py_XSETREF(c->byte_ids, Py_NewRef(byte_ids));
    Py_XSETREF(c->cut, Py_NewRef(cut));
    c->block_of = block_of;
    c->classes = classes;
    c->unk_id = unk_id;
    c->heap_from = heap_from;
    return 0;
}

static void chunker_dealloc(Chunker *c) {
    singles_free(c);
    Py_XDECREF(c->index);
    Py_XDECREF(c->blocks);
    Py_XDECREF(c->lookup);
    Py_XDECREF(c->byte_ids);
    Py_XDECREF(c->cut);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *chunker_ready(Chunker *c) {
    if (!c->singles) return raise_error(PyExc_ValueError, "Chunker was not initialised"), NULL;
    return (PyObject *)c;
}

static PyObject *chunks_method(Chunker *c, PyObject *text) {
    return chunker_ready(c) ? chunker_chunks(c, text) : NULL;
}

static PyObject *encode_method(Chunker *c, PyObject *args) {
    return chunker_ready(c) ? chunker_encode(c, args) : NULL;
}

static PyMethodDef chunker_methods[] = {
    {"chunks", (PyCFunction)chunks_method, METH_O, "chunks(text) -> the chunks of text, as the chunk regex finds them"},
    {"encode", (PyCFunction)encode_method, METH_VARARGS,
     "encode(text, cache, encode_chunk, cache_chars, cache_limit) -> the ids of every chunk of text"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ChunkerType = {
    TWIN_TYPE("app.engines.sentencepiece._chunks.Chunker", Chunker, Py_TPFLAGS_DEFAULT,
              "Chunker(index, blocks, lookup, unk_id, byte_ids, cut, heap_from): a normalized text's chunks and ids.",
              chunker_init, chunker_dealloc),
    .tp_methods = chunker_methods,
};

TWIN_MODULE_WITH_TYPES(_chunks, "The compiled twin of the SentencePiece engine's loop over chunks.", NULL, 1,
                       &ChunkerType)
