/* The compiled twin of app/engines/merging.py's merge loop, for the one case every encoder runs: the symbols of
 * a text (its bytes, or its characters) joined by concatenation, lowest rank first, leftmost on ties.
 *
 *   merge(text, table, ids=None, pair_keys=False) -> list
 *     text       bytes (symbols are its bytes) or str (symbols are its characters)
 *     table      dict: joined part -> rank, or, with pair_keys, (left part, right part) -> rank; a missing key
 *                never merges; ranks are ints or floats (SentencePiece passes minus the piece's score)
 *     ids        a dict: answer ids[part] for each part (None where the part is missing) instead of the parts
 *
 * It gives exactly what merging.merge gives for the same input (tests/test_merging.py checks it on random
 * inputs; every engine test runs through it). Short inputs use a scan over an array of pair ranks, as
 * tiktoken does; longer ones a heap of candidate pairs over a linked list, O(n log n), as SentencePiece does.
 * Parts are known by their positions in the text, so no part is built until its rank is looked up.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#define SCAN_MAX 128 /* inputs up to this many symbols are scanned; longer ones use the heap */

typedef struct {
    PyObject *text, *table, *ids;
    int pair_keys;
    const char *bytes; /* the buffer when text is bytes, else NULL */
} Merge;

/* text[a:b] as a new object of text's type. */
static PyObject *slice(const Merge *m, Py_ssize_t a, Py_ssize_t b) {
    if (m->bytes) return PyBytes_FromStringAndSize(m->bytes + a, b - a);
    return PyUnicode_Substring(m->text, a, b);
}

/* The rank of joining text[a:mid] and text[mid:b]: 1 with *rank set, 0 when the pair does not merge, -1 on error. */
static int rank_of(const Merge *m, Py_ssize_t a, Py_ssize_t mid, Py_ssize_t b, double *rank) {
    PyObject *key;
    if (m->pair_keys) {
        PyObject *left = slice(m, a, mid);
        PyObject *right = left ? slice(m, mid, b) : NULL;
        key = right ? PyTuple_Pack(2, left, right) : NULL;
        Py_XDECREF(left);
        Py_XDECREF(right);
    } else {
        key = slice(m, a, b);
    }
    if (!key) return -1;
    PyObject *value = PyDict_GetItemWithError(m->table, key); /* borrowed */
    Py_DECREF(key);
    if (!value) return PyErr_Occurred() ? -1 : 0;
    *rank = PyFloat_AsDouble(value); /* ints too */
    return (*rank == -1.0 && PyErr_Occurred()) ? -1 : 1;
}

/* The part text[a:b], or its id when an ids dict was given (None when it has none); a new reference. */
static PyObject *result_of(const Merge *m, Py_ssize_t a, Py_ssize_t b) {
    PyObject *part = slice(m, a, b);
    if (!part || !m->ids) return part;
    PyObject *id = PyDict_GetItemWithError(m->ids, part);
    Py_DECREF(part);
    if (!id) {
        if (PyErr_Occurred()) return NULL;
        id = Py_None;
    }
    Py_INCREF(id);
    return id;
}

/* The list of results for the parts that start at starts[0..count-1] (each ends where the next starts; the last
 * at n). */
static PyObject *results(const Merge *m, const Py_ssize_t *starts, Py_ssize_t count, Py_ssize_t n) {
    PyObject *out = PyList_New(count);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *item = result_of(m, starts[k], k + 1 < count ? starts[k + 1] : n);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, item);
    }
    return out;
}

/* Short inputs: part k spans [pos[k], pos[k+1]); rank[k] is the rank of joining parts k and k+1. */
static PyObject *merge_scan(const Merge *m, Py_ssize_t n) {
    Py_ssize_t pos[SCAN_MAX + 1];
    double rank[SCAN_MAX];
    Py_ssize_t count = n;
    for (Py_ssize_t i = 0; i <= n; i++) pos[i] = i;
    for (Py_ssize_t k = 0; k + 1 < count; k++) {
        int found = rank_of(m, pos[k], pos[k + 1], pos[k + 2], &rank[k]);
        if (found < 0) return NULL;
        if (!found) rank[k] = INFINITY;
    }
    while (count > 1) {
        Py_ssize_t best = 0;
        for (Py_ssize_t k = 1; k + 1 < count; k++)
            if (rank[k] < rank[best]) best = k; /* strictly lower: the leftmost wins ties */
        if (rank[best] == INFINITY) break;
        /* join parts best and best + 1: the boundary pos[best + 1] and the pair rank[best] go */
        memmove(&pos[best + 1], &pos[best + 2], (count - best - 1) * sizeof(Py_ssize_t));
        memmove(&rank[best], &rank[best + 1], (count - best - 2) * sizeof(double));
        count--;
        for (Py_ssize_t k = best > 0 ? best - 1 : 0; k <= best && k + 1 < count; k++) {
            int found = rank_of(m, pos[k], pos[k + 1], pos[k + 2], &rank[k]);
            if (found < 0) return NULL;
            if (!found) rank[k] = INFINITY;
        }
    }
    return results(m, pos, count, n);
}

/* A candidate: join the part [left, mid) with the part [mid, end). */
typedef struct {
    double rank;
    Py_ssize_t left, mid, end;
} Candidate;

static int before(const Candidate *a, const Candidate *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

typedef struct {
    Candidate *items;
    Py_ssize_t len, cap;
} Heap;

static int heap_push(Heap *h, Candidate c) {
    if (h->len == h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 64;
        Candidate *items = PyMem_Realloc(h->items, cap * sizeof(Candidate));
        if (!items) {
            PyErr_NoMemory();
            return -1;
        }
        h->items = items;
        h->cap = cap;
    }
    Py_ssize_t i = h->len++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!before(&c, &h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = c;
    return 0;
}

static Candidate heap_pop(Heap *h) {
    Candidate top = h->items[0], last = h->items[--h->len];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= h->len) break;
        if (child + 1 < h->len && before(&h->items[child + 1], &h->items[child])) child++;
        if (!before(&h->items[child], &last)) break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->len) h->items[i] = last;
    return top;
}

static int push_candidate(const Merge *m, Heap *h, Py_ssize_t left, Py_ssize_t mid, Py_ssize_t end) {
    Candidate c = {0, left, mid, end};
    int found = rank_of(m, left, mid, end, &c.rank);
    return found <= 0 ? found : heap_push(h, c);
}

/* Long inputs: the part starting at i ends at next[i] (-1 once merged into its left neighbour). A popped candidate
 * whose parts changed since it was pushed is skipped: a part is known by where it starts and ends. */
static PyObject *merge_heap(const Merge *m, Py_ssize_t n) {
    Py_ssize_t *next = PyMem_Malloc(2 * (n + 1) * sizeof(Py_ssize_t));
    if (!next) return PyErr_NoMemory();
    Py_ssize_t *prev = next + n + 1;
    Heap heap = {NULL, 0, 0};
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        next[i] = i + 1;
        prev[i] = i - 1;
    }
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        if (push_candidate(m, &heap, i, i + 1, i + 2) < 0) goto done;
    while (heap.len) {
        Candidate c = heap_pop(&heap);
        if (next[c.left] != c.mid || next[c.mid] != c.end) continue;
        next[c.mid] = -1;
        next[c.left] = c.end;
        if (prev[c.left] >= 0 && push_candidate(m, &heap, prev[c.left], c.left, c.end) < 0) goto done;
        if (c.end < n) {
            prev[c.end] = c.left;
            if (push_candidate(m, &heap, c.left, c.end, next[c.end]) < 0) goto done;
        }
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i = next[i]) prev[count++] = i; /* prev is free now: the parts' starts */
    out = results(m, prev, count, n);
done:
    PyMem_Free(next);
    PyMem_Free(heap.items);
    return out;
}

static PyObject *merge(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"text", "table", "ids", "pair_keys", NULL};
    Merge m = {0};
    PyObject *ids = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|Op", names, &m.text, &PyDict_Type, &m.table, &ids,
                                     &m.pair_keys))
        return NULL;
    if (ids != Py_None) {
        if (!PyDict_Check(ids)) {
            PyErr_SetString(PyExc_TypeError, "merge(): ids must be a dict or None");
            return NULL;
        }
        m.ids = ids;
    }
    Py_ssize_t n;
    if (PyBytes_CheckExact(m.text)) {
        m.bytes = PyBytes_AS_STRING(m.text);
        n = PyBytes_GET_SIZE(m.text);
    } else if (PyUnicode_CheckExact(m.text)) {
        n = PyUnicode_GET_LENGTH(m.text);
    } else {
        PyErr_SetString(PyExc_TypeError, "merge(): text must be bytes or str");
        return NULL;
    }
    if (n == 0) return PyList_New(0);
    return n <= SCAN_MAX ? merge_scan(&m, n) : merge_heap(&m, n);
}

static PyMethodDef methods[] = {
    {"merge", (PyCFunction)(void (*)(void))merge, METH_VARARGS | METH_KEYWORDS,
     "merge(text, table, ids=None, pair_keys=False) -> the parts of text (or their ids) after merging by rank."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_merge", "The compiled twin of merging.merge.", -1, methods};

PyMODINIT_FUNC PyInit__merge(void) { return PyModule_Create(&module); }
