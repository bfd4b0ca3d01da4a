/* The compiled twin of app/engines/merging.py's merge loop, for the one case every encoder runs: the symbols of
 * a text (its bytes, or its characters) joined by concatenation, lowest rank first, leftmost on ties.
 *
 *   merge(text, table, ids=None, pair_keys=False, memo=None) -> list
 *     text       bytes (symbols are its bytes) or str (symbols are its characters)
 *     table      dict (or FrozenMap): joined part -> rank, or, with pair_keys, (left part, right part) -> rank; a missing key
 *                never merges; ranks are ints or floats (SentencePiece passes minus the piece's score)
 *     ids        a dict (or FrozenMap): answer ids[part] for each part (None where the part is missing) instead of
 *                the parts
 *     memo       a PairMemo (see below): with a dict table that is also ids, its answers kept from one merge to the next
 *
 *   PairTable(table, ids, pair_keys=False, adjacent=()) -> a str table compiled once per model:
 *     .merge(text) is merge(text, table, pair_keys=pair_keys) (the parts), .cut(text) splits text between any
 *     two neighbouring characters that do not form one of the 2-character strings in adjacent.
 *     Every part a merge can make gets an int id (ids[part], or a new one above them), and the table becomes
 *     open-addressing hash tables on 64-bit keys: (left id, right id) -> (rank's order, joined id), character ->
 *     id. A merge then builds no object until it answers: the string keys hash in O(length) each, so on a long
 *     run (a million "a") the dict lookups were most of the time.
 *
 *   A FrozenMap (a table file's section, compiled/_frozen.c; its layout in compiled/frozen.h) as the table or the
 *     ids is read without building an object per lookup; a PairTable pickles as its slots, read back in place
 *     (pair_table_from_slots).
 *
 * It gives exactly what merging.merge gives for the same input (tests/engines/test_merging.py checks it on random
 * inputs; every engine test runs through it). Short inputs use a scan over an array of pair ranks, as
 * tiktoken does; longer ones a heap of candidate pairs over a linked list, O(n log n), as SentencePiece does.
 * Parts are known by their positions in the text, so no part is built until its rank is looked up.
 */
#include "twins.h"
#include "frozen.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX 128 /* inputs up to this many symbols are scanned; longer ones use the heap */
#define MEMO_MOST (1 << 16) /* answers a PairMemo keeps (16 bytes each, at most half full: 2 MB); then it starts afresh */

/* -- open addressing on 64-bit keys ---------------------------------------------------------------------------- */

#define EMPTY UINT64_MAX /* no key is all ones: ids and code points stay below 2^31 */

typedef struct {
    uint64_t key;
    uint32_t rank; /* the rank's place among the table's distinct ranks: the same order, exactly */
    int32_t id;
} Slot;

typedef struct {
    Slot *slots;
    uint64_t mask;
    int shift;
    Py_ssize_t used;
} Table;

static uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t)left << 32 | right; }

static uint64_t home(const Table *t, uint64_t key) { return (key * 0x9E3779B97F4A7C15ull) >> t->shift; }

static const Slot *table_find(const Table *t, uint64_t key) {
    uint64_t i = home(t, key);
    for (uint64_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) { /* a full table read back */
        const Slot *s = &t->slots[i];
        if (s->key == key) return s;
        if (s->key == EMPTY) return NULL;
    }
    return NULL;
}

static int table_alloc(Table *t, int bits) {
    t->slots = PyMem_Malloc(sizeof(Slot) << bits);
    if (!t->slots) return no_memory();
    for (uint64_t i = 0; i < (uint64_t)1 << bits; i++) t->slots[i].key = EMPTY;
    t->mask = ((uint64_t)1 << bits) - 1;
    t->shift = 64 - bits;
    t->used = 0;
    return 0;
}

/* The slot for key, new (key set, rank and id left to the caller) or the one already there; grown at half full. */
static Slot *table_put(Table *t, uint64_t key) {
    if (2 * (t->used + 1) > (Py_ssize_t)(t->mask + 1)) {
        Table bigger;
        if (table_alloc(&bigger, 64 - t->shift + 1) < 0) return NULL;
        for (uint64_t i = 0; i <= t->mask; i++) {
            if (t->slots[i].key == EMPTY) continue;
            uint64_t j = home(&bigger, t->slots[i].key);
            while (bigger.slots[j].key != EMPTY) j = (j + 1) & bigger.mask;
            bigger.slots[j] = t->slots[i];
        }
        bigger.used = t->used;
        PyMem_Free(t->slots);
        *t = bigger;
    }
    uint64_t i = home(t, key);
    while (t->slots[i].key != EMPTY && t->slots[i].key != key) i = (i + 1) & t->mask;
    if (t->slots[i].key == EMPTY) {
        t->slots[i].key = key;
        t->used++;
    }
    return &t->slots[i];
}

static Py_ssize_t table_bytes(const Table *t) { return t->slots ? (Py_ssize_t)((t->mask + 1) * sizeof(Slot)) : 0; }

typedef struct {
    PyObject_HEAD
    Table pairs;    /* (left id, right id) -> rank's order, joined id */
    Table chars;    /* code point -> id, for the characters some pair starts from */
    Table adjacent; /* (code point, code point) -> present */
    Py_buffer views[3]; /* read back from a table file (pair_table_from_slots): the slots are these buffers' */
    int frozen;
} PairTable;

static PyTypeObject PairTableType;


/* -- the merge ---------------------------------------------------------------------------------------------------- */

typedef struct {
    PyObject *text, *table, *ids;
    int pair_keys;
    const char *bytes;     /* the buffer when text is bytes, else NULL */
    const Table *pairs;    /* a PairTable's: ranks come from here, by the parts' ids */
    Table *memo;           /* a PairMemo's: the answers of table found before, by the parts' ids */
    int32_t *sym;          /* with pairs or memo: the id of the part starting at i, -1 for none */
    /* A FrozenMap as the table or the ids: the text's slices are looked up in it by their bytes (a str text's UTF-8,
     * utf8 + at[i] being where character i starts), so no object is built for them. A map whose keys are not of
     * the text's kind (or not pairs when pair_keys is, or the other way) holds none of them, as a dict would. */
    const FrozenMap *ftable, *fids;
    int ftable_ok, fids_ok;
    const unsigned char *utf8;
    Py_ssize_t *at;
} Merge;

/* Where the symbol i starts in m->utf8. */
static inline Py_ssize_t utf8_at(const Merge *m, Py_ssize_t i) { return m->at ? m->at[i] : i; }

/* The entry of the slice text[a:b] (or of the pair text[a:mid], text[mid:b]) in `map`, or NULL. */
static const MapEntry *frozen_slice(const Merge *m, const FrozenMap *map, Py_ssize_t a, Py_ssize_t mid, Py_ssize_t b) {
    const unsigned char *s = m->utf8;
    Py_ssize_t x = utf8_at(m, a), y = utf8_at(m, mid), z = utf8_at(m, b);
    if (map == m->ftable && m->pair_keys) return map_find(map, s + x, (size_t)(y - x), s + y, (size_t)(z - y));
    return map_find(map, s + x, (size_t)(z - x), NULL, 0);
}

/* The slot of joining the parts starting at a and mid, by their ids, or NULL. */
static const Slot *pair_slot(const Merge *m, Py_ssize_t a, Py_ssize_t mid) {
    int32_t left = m->sym[a], right = m->sym[mid];
    return left < 0 || right < 0 ? NULL : table_find(m->pairs, pair_key(left, right));
}

/* The parts starting at a and mid were joined, by a pair of this rank: the new part's id (with a PairTable, the
 * pair is in it; with a memo, the rank is the id). */
static void joined(const Merge *m, Py_ssize_t a, Py_ssize_t mid, double rank) {
    if (m->pairs) m->sym[a] = pair_slot(m, a, mid)->id;
    else if (m->memo) m->sym[a] = (int32_t)rank;
}

/* text[a:b] as a new object of text's type. */
static PyObject *slice(const Merge *m, Py_ssize_t a, Py_ssize_t b) {
    if (m->bytes) return PyBytes_FromStringAndSize(m->bytes + a, b - a);
    return PyUnicode_Substring(m->text, a, b);
}

/* The rank of joining text[a:mid] and text[mid:b]: 1 with *rank set, 0 when the pair does not merge, -1 on error. */
static int rank_of(const Merge *m, Py_ssize_t a, Py_ssize_t mid, Py_ssize_t b, double *rank) {
    if (m->pairs) {
        const Slot *s = pair_slot(m, a, mid);
        if (s) *rank = s->rank;
        return s != NULL;
    }
    if (m->memo) { /* answered before? */
        const Slot *s = table_find(m->memo, pair_key(m->sym[a], m->sym[mid]));
        if (s) {
            if (s->id < 0) return 0;
            *rank = s->id;
            return 1;
        }
    }
    if (m->ftable) {
        const MapEntry *e = m->ftable_ok ? frozen_slice(m, m->ftable, a, mid, b) : NULL;
        if (e) *rank = m->ftable->head->value_kind == VALUE_FLOAT ? e->value.f : (double)e->value.i;
        return e != NULL;
    }
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
    if (!value && PyErr_Occurred()) return -1;
    if (value) {
        *rank = PyFloat_AsDouble(value); /* ints too */
        if (*rank == -1.0 && PyErr_Occurred()) return -1;
    }
    if (m->memo) { /* the answer, for every later merge with this memo: the joined part's id, or -1 for none */
        if (value && !(*rank >= 0 && *rank < INT32_MAX && *rank == (int32_t)*rank))
            return raise_error(PyExc_ValueError, "merge(): with a memo, ranks must be ints from 0 to 2**31 - 2");
        if (m->memo->used >= MEMO_MOST) return value != NULL; /* full: kept until the next merge starts afresh */
        Slot *s = table_put(m->memo, pair_key(m->sym[a], m->sym[mid]));
        if (!s) return -1;
        s->id = value ? (int32_t)*rank : -1;
    }
    return value != NULL;
}

/* The part text[a:b], or its id when an ids dict was given (None when it has none); a new reference. */
static PyObject *result_of(const Merge *m, Py_ssize_t a, Py_ssize_t b) {
    if (m->memo) return PyLong_FromLong(m->sym[a]); /* ids is table: a part's id is its rank */
    if (m->fids) {
        const MapEntry *e = m->fids_ok ? frozen_slice(m, m->fids, a, b, b) : NULL;
        if (e) return map_value(m->fids, e);
        Py_RETURN_NONE;
    }
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
        joined(m, pos[best], pos[best + 1], rank[best]);
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

/* A candidate: join the part [left, mid) with the part [mid, end). Positions are 32-bit (merge_heap refuses longer
 * inputs): a smaller heap stays in cache longer. */
typedef struct {
    double rank;
    int32_t left, mid, end;
} Candidate;

static int before(const Candidate *a, const Candidate *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

/* Each heap node has this many children: half the levels of a binary heap, and the children of a node are
 * neighbours in memory: a million "a" merge about a fifth faster than with 2. */
#define ARITY 4

typedef struct {
    Candidate *items;
    Py_ssize_t len, cap;
} Heap;

static int heap_push(Heap *h, Candidate c) {
    if (GROW(h->items, h->cap, h->len + 1, 64) < 0) return -1;
    Py_ssize_t i = h->len++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / ARITY;
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
        Py_ssize_t first = ARITY * i + 1, child = first;
        if (first >= h->len) break;
        Py_ssize_t stop = first + ARITY < h->len ? first + ARITY : h->len;
        for (Py_ssize_t k = first + 1; k < stop; k++)
            if (before(&h->items[k], &h->items[child])) child = k;
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
    if (n > INT32_MAX)
        return raise_error(PyExc_ValueError, "merge(): inputs of 2**31 symbols or more are not supported"), NULL;
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
        joined(m, c.left, c.mid, c.rank);
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

/* A str text's UTF-8 for the FrozenMap lookups, and where each of its n characters starts in it (m->at[n] is its
 * length). *owner: a bytes object holding the UTF-8 when the text has lone surrogates (passed through). */
static int text_utf8(Merge *m, Py_ssize_t n, PyObject **owner) {
    Py_ssize_t len;
    const char *data = PyUnicode_AsUTF8AndSize(m->text, &len);
    if (!data) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear();
        *owner = PyUnicode_AsEncodedString(m->text, "utf-8", "surrogatepass");
        if (!*owner) return -1;
        data = PyBytes_AS_STRING(*owner);
    }
    m->utf8 = (const unsigned char *)data;
    m->at = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    if (!m->at) return no_memory();
    int kind = PyUnicode_KIND(m->text);
    const void *chars = PyUnicode_DATA(m->text);
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, chars, i);
        m->at[i] = pos;
        pos += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    }
    m->at[n] = pos;
    return 0;
}

static PyTypeObject PairMemoType;
static int memo_start(PyObject *memo, Merge *m, Py_ssize_t n);

/* The FrozenMap type of app.engines.compiled._frozen, looked up as this module starts (NULL when it was not built:
 * then no table is one). */
static PyTypeObject *FrozenMapType;

static int is_frozen_map(PyObject *o) {
    return FrozenMapType && Py_IS_TYPE(o, FrozenMapType) && frozen_map_ready((FrozenMap *)o);
}

static PyObject *merge(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"text", "table", "ids", "pair_keys", "memo", NULL};
    Merge m = {0};
    PyObject *ids = Py_None, *memo = Py_None, *table, *owner = NULL, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OpO", names, &m.text, &table, &ids, &m.pair_keys, &memo))
        return NULL;
    if (PyDict_Check(table)) m.table = table;
    else if (is_frozen_map(table)) m.ftable = (FrozenMap *)table;
    else return raise_error(PyExc_TypeError, "merge(): table must be a dict or a FrozenMap"), NULL;
    if (ids != Py_None) {
        if (PyDict_Check(ids)) m.ids = ids;
        else if (is_frozen_map(ids)) m.fids = (FrozenMap *)ids;
        else return raise_error(PyExc_TypeError, "merge(): ids must be a dict, a FrozenMap or None"), NULL;
    }
    Py_ssize_t n;
    if (PyBytes_CheckExact(m.text)) {
        m.bytes = PyBytes_AS_STRING(m.text);
        m.utf8 = (const unsigned char *)m.bytes;
        n = PyBytes_GET_SIZE(m.text);
    } else if (PyUnicode_CheckExact(m.text)) {
        n = PyUnicode_GET_LENGTH(m.text);
    } else {
        PyErr_SetString(PyExc_TypeError, "merge(): text must be bytes or str");
        return NULL;
    }
    if (n == 0) return PyList_New(0);
    int is_str = m.bytes == NULL;
    m.ftable_ok = m.ftable && frozen_fits(m.ftable, is_str, m.pair_keys);
    m.fids_ok = m.fids && frozen_fits(m.fids, is_str, 0);
    if (is_str && (m.ftable || m.fids) && text_utf8(&m, n, &owner) < 0) goto done;
    if (memo != Py_None && memo_start(memo, &m, n) < 0) goto done;
    out = n <= SCAN_MAX ? merge_scan(&m, n) : merge_heap(&m, n);
done:
    PyMem_Free(m.sym);
    PyMem_Free(m.at);
    Py_XDECREF(owner);
    return out;
}

/* -- PairMemo: the answers of a byte-level merge's rank table, kept from one merge to the next --------------------- */

/* With tiktoken's rule (the table maps joined bytes to their rank, which is also their id: ids is table), every
 * part is a token, known by its id; the answer for joining two parts is the same every time. A memo keeps each
 * answer found by the ids of the two parts, in an int hash table: a text of many distinct pre-tokens asks the dict
 * (a bytes object built, hashed, and looked up among 100,000 or more) for each pair only once. */


typedef struct {
    PyObject_HEAD
    Table answers;         /* (left id, right id) -> the joined part's id, or -1 when the pair does not merge */
    int32_t byte_id[256];  /* the id of each single byte, -1 when it has none, -2 before it is looked up */
    PyObject *table;       /* the table the answers are of (held, so that no other can take its place) */
} PairMemo;

/* Forget every answer (and the table they were of). */
static int memo_reset(PairMemo *memo) {
    PyMem_Free(memo->answers.slots);
    memo->answers.slots = NULL;
    for (int b = 0; b < 256; b++) memo->byte_id[b] = -2;
    Py_CLEAR(memo->table);
    return table_alloc(&memo->answers, 12);
}

/* Set m up to use memo (or to go without it, for a byte with no id): m->sym gets each byte's id. */
static int memo_start(PyObject *memo_object, Merge *m, Py_ssize_t n) {
    if (!PyObject_TypeCheck(memo_object, &PairMemoType))
        return raise_error(PyExc_TypeError, "merge(): memo must be a PairMemo or None");
    PairMemo *memo = (PairMemo *)memo_object;
    if (m->ftable || m->fids) return 0; /* a FrozenMap: read in place, building no object; it goes without the memo */
    if (!m->bytes || m->pair_keys || m->ids != m->table)
        return raise_error(PyExc_ValueError, "merge(): a memo needs bytes text, ids being table, no pair_keys");
    if (memo->table != m->table || memo->answers.used >= MEMO_MOST) { /* another table, or full: start afresh */
        if (memo_reset(memo) < 0) return -1;
        memo->table = Py_NewRef(m->table);
    }
    m->sym = PyMem_Malloc(n * sizeof(int32_t));
    if (!m->sym) return no_memory();
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)m->bytes[i];
        if (memo->byte_id[b] == -2) {
            PyObject *one = PyBytes_FromStringAndSize(m->bytes + i, 1);
            PyObject *id = one ? PyDict_GetItemWithError(m->table, one) : NULL;
            Py_XDECREF(one);
            if (!id && PyErr_Occurred()) return -1;
            long v = id ? PyLong_AsLong(id) : -1;
            if (v == -1 && PyErr_Occurred()) return -1;
            if (id && !(v >= 0 && v < INT32_MAX))
                return raise_error(PyExc_ValueError, "merge(): with a memo, ranks must be ints from 0 to 2**31 - 2");
            memo->byte_id[b] = (int32_t)v;
        }
        if (memo->byte_id[b] < 0) return 0; /* a byte with no id: this merge goes without the memo */
        m->sym[i] = memo->byte_id[b];
    }
    m->memo = &memo->answers;
    return 0;
}

static int pair_memo_init(PairMemo *memo, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs)))
        return raise_error(PyExc_TypeError, "PairMemo() takes no arguments");
    return memo_reset(memo);
}

static void pair_memo_dealloc(PairMemo *memo) {
    PyMem_Free(memo->answers.slots);
    Py_XDECREF(memo->table);
    Py_TYPE(memo)->tp_free((PyObject *)memo);
}

static PyObject *pair_memo_len(PairMemo *memo, void *closure) { return PyLong_FromSsize_t(memo->answers.used); }

static PyObject *pair_memo_nbytes(PairMemo *memo, void *closure) {
    return PyLong_FromSsize_t(table_bytes(&memo->answers));
}

static PyGetSetDef pair_memo_getset[] = {
    {"answers", (getter)pair_memo_len, NULL, "how many answers it keeps", NULL},
    {"nbytes", (getter)pair_memo_nbytes, NULL, "the memory of its hash table", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PairMemoType = {
    TWIN_TYPE("app.engines._merge.PairMemo", PairMemo, Py_TPFLAGS_DEFAULT,
              "PairMemo(): the answers of a byte-level rank table, kept by merge(..., memo=) from one merge to the next.",
              pair_memo_init, pair_memo_dealloc),
    .tp_getset = pair_memo_getset,
};

/* -- PairTable: a str table compiled once ------------------------------------------------------------------------ */

typedef struct {
    PyObject *ids, *extra; /* part -> id: the caller's, and the ones given here to parts it lacks */
    long long next_free;
    double *ranks; /* the table's distinct ranks, ascending; NULL when they are all ints from 0 to 2**32 - 1 */
    Py_ssize_t n_ranks;
} Build;

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Every distinct rank of table, sorted: a rank is then stored as its place among them (or as itself, when every
 * rank is an int that fits, as merge lists' are). */
static int collect_ranks(Build *b, PyObject *table) {
    Py_ssize_t pos = 0, n = 0;
    int small_ints = 1;
    PyObject *key, *value;
    b->ranks = PyMem_Malloc((PyDict_GET_SIZE(table) + 1) * sizeof(double));
    if (!b->ranks) return no_memory();
    while (PyDict_Next(table, &pos, &key, &value)) {
        double r = PyFloat_AsDouble(value);
        if (r == -1.0 && PyErr_Occurred()) return -1;
        if (isnan(r)) return raise_error(PyExc_ValueError, "PairTable(): a rank is NaN, so pairs cannot be ordered");
        b->ranks[n++] = r;
        small_ints = small_ints && r >= 0 && r <= UINT32_MAX && r == floor(r);
    }
    if (small_ints) {
        PyMem_Free(b->ranks);
        b->ranks = NULL;
        return 0;
    }
    qsort(b->ranks, n, sizeof(double), by_value);
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (k == 0 || b->ranks[i] != b->ranks[k - 1]) b->ranks[k++] = b->ranks[i];
    b->n_ranks = k;
    return 0;
}

/* The place of value's rank among b->ranks (it is there: collect_ranks saw every value). */
static uint32_t rank_place(const Build *b, PyObject *value) {
    double r = PyFloat_AsDouble(value);
    if (!b->ranks) return (uint32_t)r;
    Py_ssize_t lo = 0, hi = b->n_ranks - 1;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (b->ranks[mid] < r) lo = mid + 1;
        else hi = mid;
    }
    return (uint32_t)lo;
}

static int bad_id(void) { return raise_error(PyExc_ValueError, "PairTable(): ids must be ints from 0 to 2**31 - 2"); }

/* The id of part: ids[part], else the new one it was given before, else a new one. -1 on error. A one-character part
 * is noted in t->chars: a merge starts from the characters' ids. */
static int64_t part_id(Build *b, PairTable *t, PyObject *part) {
    if (!PyUnicode_Check(part)) return raise_error(PyExc_TypeError, "PairTable(): parts must be str");
    PyObject *value = PyDict_GetItemWithError(b->ids, part);
    if (!value && !PyErr_Occurred()) value = PyDict_GetItemWithError(b->extra, part);
    if (!value && PyErr_Occurred()) return -1;
    long long id;
    if (value) {
        id = PyLong_AsLongLong(value);
        if (id == -1 && PyErr_Occurred()) return -1;
    } else {
        if (b->next_free >= INT32_MAX) return bad_id();
        id = b->next_free++;
        PyObject *number = PyLong_FromLongLong(id);
        int failed = !number || PyDict_SetItem(b->extra, part, number) < 0;
        Py_XDECREF(number);
        if (failed) return -1;
    }
    if (PyUnicode_GET_LENGTH(part) == 1) {
        Slot *s = table_put(&t->chars, PyUnicode_READ_CHAR(part, 0));
        if (!s) return -1;
        s->id = (int32_t)id;
    }
    return id;
}

/* pairs[(left, right)] = (rank's place, id of the joined part); a later put of the same pair wins. */
static int put_pair(Build *b, PairTable *t, PyObject *left, PyObject *right, PyObject *joined, uint32_t rank) {
    int64_t l = part_id(b, t, left), r = l < 0 ? -1 : part_id(b, t, right), j = r < 0 ? -1 : part_id(b, t, joined);
    if (j < 0) return -1;
    Slot *s = table_put(&t->pairs, pair_key((uint32_t)l, (uint32_t)r));
    if (!s) return -1;
    s->rank = rank;
    s->id = (int32_t)j;
    return 0;
}

/* A (left, right) key: the joined part is left + right. */
static int put_pair_key(Build *b, PairTable *t, PyObject *key, uint32_t rank) {
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2)
        return raise_error(PyExc_TypeError, "PairTable(): with pair_keys, keys must be (left, right) tuples");
    PyObject *left = PyTuple_GET_ITEM(key, 0), *right = PyTuple_GET_ITEM(key, 1);
    PyObject *joined = PyUnicode_Check(left) && PyUnicode_Check(right) ? PyUnicode_Concat(left, right) : NULL;
    if (!joined) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "PairTable(): parts must be str");
        return -1;
    }
    int failed = put_pair(b, t, left, right, joined, rank);
    Py_DECREF(joined);
    return failed;
}

/* Pair keys: table is (left, right) -> rank, or a list of pairs ranked by their place in it. */
static int put_pair_keys(Build *b, PairTable *t, PyObject *table) {
    if (PyList_Check(table)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(table); i++)
            if (put_pair_key(b, t, PyList_GET_ITEM(table, i), (uint32_t)i) < 0) return -1;
        return 0;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(table, &pos, &key, &value))
        if (put_pair_key(b, t, key, rank_place(b, value)) < 0) return -1;
    return 0;
}

/* Joined keys: table is joined part -> rank. Every split of a key into two parts that can exist (a character, or a
 * key: every part a merge makes is one) is a pair. */
static int put_splits(Build *b, PairTable *t, PyObject *table) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(table, &pos, &key, &value)) {
        if (!PyUnicode_Check(key)) return raise_error(PyExc_TypeError, "PairTable(): parts must be str");
        Py_ssize_t n = PyUnicode_GET_LENGTH(key);
        for (Py_ssize_t k = 1; k < n; k++) {
            PyObject *left = PyUnicode_Substring(key, 0, k), *right = left ? PyUnicode_Substring(key, k, n) : NULL;
            int ok = right ? 1 : -1;
            if (ok > 0 && k > 1) ok = PyDict_Contains(table, left);
            if (ok > 0 && n - k > 1) ok = PyDict_Contains(table, right);
            if (ok > 0) ok = put_pair(b, t, left, right, key, rank_place(b, value)) < 0 ? -1 : 1;
            Py_XDECREF(left);
            Py_XDECREF(right);
            if (ok < 0) return -1;
        }
    }
    return 0;
}

static int put_adjacent(PairTable *t, PyObject *adjacent) {
    PyObject *iter = PyObject_GetIter(adjacent), *item;
    if (!iter) return -1;
    while ((item = PyIter_Next(iter))) {
        int ok = PyUnicode_Check(item) && PyUnicode_GET_LENGTH(item) == 2;
        Slot *s = ok ? table_put(&t->adjacent, pair_key(PyUnicode_READ_CHAR(item, 0), PyUnicode_READ_CHAR(item, 1)))
                     : NULL;
        Py_DECREF(item);
        if (!s) {
            if (!ok) PyErr_SetString(PyExc_ValueError, "PairTable(): adjacent must hold 2-character strings");
            Py_DECREF(iter);
            return -1;
        }
    }
    Py_DECREF(iter);
    return PyErr_Occurred() ? -1 : 0;
}

static void pair_table_free(PairTable *t) {
    Table *tables[] = {&t->pairs, &t->chars, &t->adjacent};
    for (int i = 0; i < 3; i++) {
        if (t->frozen) PyBuffer_Release(&t->views[i]);
        else PyMem_Free(tables[i]->slots);
        tables[i]->slots = NULL;
    }
    t->frozen = 0;
}

static int pair_table_init(PairTable *t, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"table", "ids", "pair_keys", "adjacent", NULL};
    PyObject *table, *ids, *adjacent = NULL;
    int pair_keys = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|pO", names, &table, &PyDict_Type, &ids, &pair_keys, &adjacent))
        return -1;
    if (!PyDict_Check(table) && !(pair_keys && PyList_Check(table)))
        return raise_error(PyExc_TypeError, "PairTable(): table must be a dict, or with pair_keys a list of pairs");
    pair_table_free(t);
    Build b = {ids, PyDict_New(), 0, NULL, 0};
    int bits = 4; /* pairs: at least two slots a key (splits: guessing two keys an entry) */
    while (((Py_ssize_t)1 << bits) < 2 * PyObject_Length(table)) bits++;
    int failed = !b.extra || table_alloc(&t->pairs, bits) < 0 || table_alloc(&t->chars, 4) < 0 ||
                 table_alloc(&t->adjacent, 4) < 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (!failed && PyDict_Next(ids, &pos, &key, &value)) {
        long long id = PyLong_AsLongLong(value);
        if (id == -1 && PyErr_Occurred()) failed = 1;
        else if (id < 0 || id >= INT32_MAX) failed = bad_id();
        else if (id >= b.next_free) b.next_free = id + 1;
    }
    failed = failed || (PyDict_Check(table) && collect_ranks(&b, table) < 0) ||
             (pair_keys ? put_pair_keys(&b, t, table) : put_splits(&b, t, table)) < 0 ||
             (adjacent && put_adjacent(t, adjacent) < 0);
    Py_XDECREF(b.extra);
    PyMem_Free(b.ranks);
    if (failed) pair_table_free(t);
    return failed ? -1 : 0;
}

static void pair_table_dealloc(PairTable *t) {
    pair_table_free(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int check_text(PairTable *t, PyObject *text) {
    if (!t->pairs.slots) return raise_error(PyExc_ValueError, "PairTable was not initialised");
    if (!PyUnicode_CheckExact(text)) return raise_error(PyExc_TypeError, "PairTable: text must be str");
    return 0;
}

static PyObject *pair_table_merge(PairTable *t, PyObject *text) {
    if (check_text(t, text) < 0) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0) return PyList_New(0);
    Merge m = {.text = text, .pairs = &t->pairs, .sym = PyMem_Malloc(n * sizeof(int32_t))};
    if (!m.sym) return PyErr_NoMemory();
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        const Slot *s = table_find(&t->chars, PyUnicode_READ(kind, data, i));
        m.sym[i] = s ? s->id : -1;
    }
    PyObject *out = n <= SCAN_MAX ? merge_scan(&m, n) : merge_heap(&m, n);
    PyMem_Free(m.sym);
    return out;
}

static PyObject *pair_table_cut(PairTable *t, PyObject *text) {
    if (check_text(t, text) < 0) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0;
    PyObject *out = PyList_New(0);
    if (!out || n == 0) return out;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 1; i <= n; i++) {
        if (i < n && table_find(&t->adjacent, pair_key(PyUnicode_READ(kind, data, i - 1), PyUnicode_READ(kind, data, i))))
            continue;
        PyObject *part = PyUnicode_Substring(text, start, i);
        if (!part || PyList_Append(out, part) < 0) {
            Py_XDECREF(part);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(part);
        start = i;
    }
    return out;
}

/* How a PairTable is pickled (into a table file, app/engines/registry/table_files.py): its three slot arrays as bytes,
 * which pair_table_from_slots reads back in place. */
static PyObject *pair_table_reduce(PairTable *t, PyObject *unused) {
    if (!t->pairs.slots) return raise_error(PyExc_ValueError, "PairTable was not initialised"), NULL;
    PyObject *module = PyImport_ImportModule("app.engines._merge");
    PyObject *from = module ? PyObject_GetAttrString(module, "pair_table_from_slots") : NULL;
    Py_XDECREF(module);
    if (!from) return NULL;
    const Table *tables[] = {&t->pairs, &t->chars, &t->adjacent};
    PyObject *parts[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        parts[i] = PyBytes_FromStringAndSize((const char *)tables[i]->slots, table_bytes(tables[i]));
        if (!parts[i]) {
            Py_XDECREF(parts[0]);
            Py_XDECREF(parts[1]);
            Py_DECREF(from);
            return NULL;
        }
    }
    return Py_BuildValue("(N(NNN))", from, parts[0], parts[1], parts[2]);
}

/* pair_table_from_slots(pairs, chars, adjacent): a PairTable whose slots are the three buffers (what __reduce__ gave:
 * each a power of two of slots), read in place and kept alive by it. */
static PyObject *pair_table_from_slots(PyObject *self, PyObject *args) {
    PyObject *buffers[3];
    if (!PyArg_ParseTuple(args, "OOO", &buffers[0], &buffers[1], &buffers[2])) return NULL;
    PairTable *t = (PairTable *)PyType_GenericNew(&PairTableType, NULL, NULL);
    if (!t) return NULL;
    Table *tables[] = {&t->pairs, &t->chars, &t->adjacent};
    int taken = 0;
    for (; taken < 3; taken++) {
        Py_buffer *v = &t->views[taken];
        if (PyObject_GetBuffer(buffers[taken], v, PyBUF_SIMPLE) < 0) break;
        Py_ssize_t slots = v->len / (Py_ssize_t)sizeof(Slot);
        if (v->len % (Py_ssize_t)sizeof(Slot) || slots < 1 || (slots & (slots - 1)) || ((uintptr_t)v->buf & 7)) {
            PyBuffer_Release(v);
            PyErr_SetString(PyExc_ValueError, "pair_table_from_slots(): not the slots of a PairTable");
            break;
        }
        int bits = 0;
        while (((Py_ssize_t)1 << bits) < slots) bits++;
        tables[taken]->slots = v->buf;
        tables[taken]->mask = (uint64_t)slots - 1;
        tables[taken]->shift = 64 - bits;
        tables[taken]->used = 0;
    }
    if (taken < 3) {
        for (int i = 0; i < taken; i++) PyBuffer_Release(&t->views[i]);
        for (int i = 0; i < 3; i++) tables[i]->slots = NULL;
        Py_DECREF(t);
        return NULL;
    }
    t->frozen = 1;
    return (PyObject *)t;
}

static PyObject *pair_table_nbytes(PairTable *t, void *closure) {
    return PyLong_FromSsize_t(table_bytes(&t->pairs) + table_bytes(&t->chars) + table_bytes(&t->adjacent));
}

static PyMethodDef pair_table_methods[] = {
    {"merge", (PyCFunction)pair_table_merge, METH_O, "merge(text) -> the parts of text after merging by rank."},
    {"cut", (PyCFunction)pair_table_cut, METH_O,
     "cut(text) -> text split between neighbouring characters that are not an adjacent pair."},
    {"__reduce__", (PyCFunction)pair_table_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef pair_table_getset[] = {
    {"nbytes", (getter)pair_table_nbytes, NULL, "the memory of the hash tables", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PairTableType = {
    TWIN_TYPE("app.engines._merge.PairTable", PairTable, Py_TPFLAGS_DEFAULT,
              "PairTable(table, ids, pair_keys=False, adjacent=()): a str merge table compiled to int hash tables.",
              pair_table_init, pair_table_dealloc),
    .tp_methods = pair_table_methods,
    .tp_getset = pair_table_getset,
};

static PyMethodDef methods[] = {
    {"merge", (PyCFunction)(void (*)(void))merge, METH_VARARGS | METH_KEYWORDS,
     "merge(text, table, ids=None, pair_keys=False, memo=None) -> the parts of text (or their ids) after merging by "
     "rank."},
    {"pair_table_from_slots", pair_table_from_slots, METH_VARARGS,
     "pair_table_from_slots(pairs, chars, adjacent) -> a PairTable read in place from the buffers __reduce__ gave."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef _merge_module = {PyModuleDef_HEAD_INIT, "_merge", "The compiled twin of merging.merge.", -1,
                                           methods};

PyMODINIT_FUNC PyInit__merge(void) {
    PyTypeObject *types[] = {&PairTableType, &PairMemoType};
    PyObject *mod = twin_module_with_types(&_merge_module, types, 2, 2);
    PyObject *frozen = mod ? PyImport_ImportModule("app.engines.compiled._frozen") : NULL;
    PyObject *type = frozen ? PyObject_GetAttrString(frozen, "FrozenMap") : NULL;
    Py_XDECREF(frozen);
    if (type && PyType_Check(type)) FrozenMapType = (PyTypeObject *)type; /* kept for the life of the process */
    else Py_XDECREF(type);
    PyErr_Clear(); /* without the frozen containers, the merge reads dicts only */
    return mod;
}
