/* The compiled twin of app/engines/training/word_table.py's PyWordTable: words of a text (maximal runs of the code points a bitmap
 * marks: the regex module's \w, as word_table.word_bitmap() reads it from that module), each looked up in a table of
 * known words, tallied by the value the table holds for it.
 *
 *   WordTable(bitmap)             bitmap: one bit per code point (0x110000 / 8 bytes, least significant bit first)
 *   .count(text) -> (words, {value: occurrences}, [words not in the table, every occurrence, in order])
 *   .add(words, values)           words: a list of str, values: a list of int (>= 0)
 *   .clear(), len(table)
 *
 * Known words are kept as code points in one arena and found by a hash of their code points (FNV-1a), so a word
 * already known costs no Python object: the table's values are small ints (the measure's mask of the tokenizers that
 * cut the word), tallied in an array.
 */
#include <stdint.h>

#include "twins.h"

#define CODE_POINTS 0x110000
/* Values below this are tallied in an array; larger ones in a dict. */
#define SMALL 1024

/* A known word: where its code points are in the arena, how many, its value. */
typedef struct {
    Py_ssize_t start, len;
    long value;
} Entry;

typedef struct {
    PyObject_HEAD
    PyObject *bitmap;        /* bytes */
    Py_ssize_t cap;          /* slots (a power of two, or 0) */
    uint64_t *slots;         /* 0 (empty), or the word's hash's top 32 bits and its index + 1 (low 32 bits) */
    Entry *entries;
    Py_ssize_t used, entries_cap;
    Py_UCS4 *arena;
    Py_ssize_t arena_len, arena_cap;
} WordTable;

static uint64_t hash_of(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    return h;
}

#define TAG(h) ((h) & 0xFFFFFFFF00000000ULL)

/* The index of the word text[start:end] (of hash h), or -1. */
static Py_ssize_t find(WordTable *t, uint64_t h, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    if (!t->cap) return -1;
    Py_ssize_t mask = t->cap - 1, len = end - start;
    for (Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)mask);; s = (s + 1) & mask) {
        uint64_t slot = t->slots[s];
        if (!slot) return -1;
        if (TAG(slot) != TAG(h)) continue;
        Py_ssize_t k = (Py_ssize_t)(slot & 0xFFFFFFFFULL) - 1;
        const Entry *e = &t->entries[k];
        if (e->len != len) continue;
        const Py_UCS4 *known = t->arena + e->start;
        Py_ssize_t i = 0;
        while (i < len && known[i] == PyUnicode_READ(kind, data, start + i)) i++;
        if (i == len) return k;
    }
}

static void place(uint64_t *slots, Py_ssize_t cap, uint64_t h, Py_ssize_t k) {
    Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(cap - 1));
    while (slots[s]) s = (s + 1) & (cap - 1);
    slots[s] = TAG(h) | (uint64_t)(k + 1);
}

static int grow_slots(WordTable *t) {
    Py_ssize_t cap = t->cap ? 2 * t->cap : 1024;
    uint64_t *slots = PyMem_Calloc((size_t)cap, sizeof *slots);
    if (!slots) return no_memory();
    int kind = PyUnicode_4BYTE_KIND;
    for (Py_ssize_t k = 0; k < t->used; k++) {
        const Entry *e = &t->entries[k];
        place(slots, cap, hash_of(kind, t->arena, e->start, e->start + e->len), k);
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

/* Add word (a str) with value; a word already there keeps its first value. 0, or -1. */
static int add_one(WordTable *t, PyObject *word, long value) {
    int kind = PyUnicode_KIND(word);
    const void *data = PyUnicode_DATA(word);
    Py_ssize_t len = PyUnicode_GET_LENGTH(word);
    uint64_t h = hash_of(kind, data, 0, len);
    if (find(t, h, kind, data, 0, len) >= 0) return 0;
    if (t->used >= 0x7FFFFFFF) return raise_error(PyExc_OverflowError, "the word table is full");
    if (2 * (t->used + 1) > t->cap && grow_slots(t) < 0) return -1;
    if (GROW(t->entries, t->entries_cap, t->used + 1, 1024) < 0) return -1;
    if (GROW(t->arena, t->arena_cap, t->arena_len + len, 4096) < 0) return -1;
    for (Py_ssize_t i = 0; i < len; i++) t->arena[t->arena_len + i] = PyUnicode_READ(kind, data, i);
    t->entries[t->used] = (Entry){t->arena_len, len, value};
    t->arena_len += len;
    place(t->slots, t->cap, h, t->used);
    t->used++;
    return 0;
}

static void clear_all(WordTable *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->entries);
    PyMem_Free(t->arena);
    t->slots = NULL, t->entries = NULL, t->arena = NULL;
    t->cap = t->used = t->entries_cap = t->arena_len = t->arena_cap = 0;
}

static int table_init(WordTable *t, PyObject *args, PyObject *kwds) {
    PyObject *bitmap;
    if (!PyArg_ParseTuple(args, "O!:WordTable", &PyBytes_Type, &bitmap)) return -1;
    if (PyBytes_GET_SIZE(bitmap) != CODE_POINTS / 8)
        return raise_error(PyExc_ValueError, "the word bitmap has one bit per code point: 0x110000 / 8 bytes");
    Py_XSETREF(t->bitmap, Py_NewRef(bitmap));
    clear_all(t);
    return 0;
}

static void table_dealloc(WordTable *t) {
    clear_all(t);
    Py_XDECREF(t->bitmap);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *table_count(WordTable *t, PyObject *arg) {
    if (!PyUnicode_Check(arg)) return PyErr_Format(PyExc_TypeError, "count() takes a str");
    if (!t->bitmap) return PyErr_Format(PyExc_ValueError, "the table has no bitmap");
    const unsigned char *bits = (const unsigned char *)PyBytes_AS_STRING(t->bitmap);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    Py_ssize_t len = PyUnicode_GET_LENGTH(arg), words = 0, i = 0;
    Py_ssize_t *small = PyMem_Calloc(SMALL, sizeof *small);
    PyObject *big = PyDict_New(), *missing = PyList_New(0), *result = NULL;
    if (!small || !big || !missing) {
        if (!small) PyErr_NoMemory();
        goto done;
    }
    while (i < len) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!((bits[c >> 3] >> (c & 7)) & 1)) {
            i++;
            continue;
        }
        Py_ssize_t start = i++;
        while (i < len) {
            c = PyUnicode_READ(kind, data, i);
            if (!((bits[c >> 3] >> (c & 7)) & 1)) break;
            i++;
        }
        words++;
        Py_ssize_t k = find(t, hash_of(kind, data, start, i), kind, data, start, i);
        long v = k >= 0 ? t->entries[k].value : -1;
        if (k >= 0 && v < SMALL) {
            small[v]++;
            continue;
        }
        int rc;
        if (k >= 0) {
            PyObject *key = PyLong_FromLong(v);
            PyObject *old = key ? PyDict_GetItemWithError(big, key) : NULL;
            PyObject *now = (key && (old || !PyErr_Occurred())) ? PyLong_FromSsize_t((old ? PyLong_AsSsize_t(old) : 0) + 1) : NULL;
            rc = now ? PyDict_SetItem(big, key, now) : -1;
            Py_XDECREF(key);
            Py_XDECREF(now);
        } else {
            PyObject *word = PyUnicode_Substring(arg, start, i);
            rc = word ? PyList_Append(missing, word) : -1;
            Py_XDECREF(word);
        }
        if (rc < 0) goto done;
    }
    for (long v = 0; v < SMALL; v++) {
        if (!small[v]) continue;
        PyObject *key = PyLong_FromLong(v), *n = PyLong_FromSsize_t(small[v]);
        int rc = (key && n) ? PyDict_SetItem(big, key, n) : -1;
        Py_XDECREF(key);
        Py_XDECREF(n);
        if (rc < 0) goto done;
    }
    result = Py_BuildValue("(nOO)", words, big, missing);
done:
    PyMem_Free(small);
    Py_XDECREF(big);
    Py_XDECREF(missing);
    return result;
}

static PyObject *table_add(WordTable *t, PyObject *args) {
    PyObject *words, *values;
    if (!PyArg_ParseTuple(args, "O!O!:add", &PyList_Type, &words, &PyList_Type, &values)) return NULL;
    if (PyList_GET_SIZE(words) != PyList_GET_SIZE(values))
        return PyErr_Format(PyExc_ValueError, "add() takes as many values as words");
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(words); j++) {
        PyObject *word = PyList_GET_ITEM(words, j);
        long value = PyLong_AsLong(PyList_GET_ITEM(values, j));
        if (value == -1 && PyErr_Occurred()) return NULL;
        if (!PyUnicode_Check(word) || value < 0)
            return PyErr_Format(PyExc_TypeError, "add() takes words (str) and values (int >= 0)");
        if (add_one(t, word, value) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *table_clear(WordTable *t, PyObject *unused) {
    clear_all(t);
    Py_RETURN_NONE;
}

static Py_ssize_t table_len(WordTable *t) { return t->used; }

static PyMethodDef table_methods[] = {
    {"count", (PyCFunction)table_count, METH_O,
     "count(text) -> (words, {value: occurrences}, [words not in the table, every occurrence])"},
    {"add", (PyCFunction)table_add, METH_VARARGS, "add(words, values): know each word with its value"},
    {"clear", (PyCFunction)table_clear, METH_NOARGS, "forget every word"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_as_sequence = {.sq_length = (lenfunc)table_len};

static PyTypeObject WordTableType = {
    TWIN_TYPE("app.engines.training._word_table.WordTable", WordTable, Py_TPFLAGS_DEFAULT,
              "Known words (code points) and their values; count(text) tallies a text's words by value.",
              table_init, table_dealloc),
    .tp_methods = table_methods,
    .tp_as_sequence = &table_as_sequence,
};

TWIN_MODULE_WITH_TYPES(_word_table, "The compiled twin of app/engines/training/word_table.py: words tallied by a table.", NULL,
                       1, &WordTableType)
