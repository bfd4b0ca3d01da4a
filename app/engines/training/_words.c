/* The compiled twin of the two loops of app/engines/training/words.py that visit every word (ShortWords): the
 * first count of every pair, and one merge. Words are strings with one character per id; a pair is keyed by its
 * two characters as a str.
 *
 *   index_pairs(words, freqs) -> (where, counts)
 *     where   dict: pair -> the indices of the words holding it, one entry per occurrence, ascending
 *     counts  dict: pair -> occurrences times the word's frequency; both in the order pairs are first met
 *
 *   merge_words(words, freqs, where, entries, pair, new) -> changes
 *     Rewrites words[w] for each w of entries holding pair (its occurrences left to right, without overlaps,
 *     become the character new), puts the lists of the pairs this made into where, and returns the changes,
 *     [(old pair, new pair, n)], left neighbours first, then right ones, then (b a) -> (new new).
 *
 * Each gives exactly what index_pairs_python / merge_words_python give for the same input (tests/test_training_c.py
 * checks it on random inputs; every trainer test runs through it). Pairs and neighbours are grouped in small hash
 * tables keyed by code points, so no key string is built per occurrence, only one per distinct pair. Frequencies
 * are added as C integers while they fit, as Python numbers after.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* -- a hash table: 64-bit key (never 0) -> index ------------------------------------------------------------- */
typedef struct {
    uint64_t *keys; /* 0: empty */
    Py_ssize_t *values;
    size_t mask;
    Py_ssize_t len;
} Table;

static int table_init(Table *t, size_t cap) { /* cap: a power of two */
    t->keys = PyMem_Calloc(cap, sizeof(uint64_t));
    t->values = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    t->mask = cap - 1;
    t->len = 0;
    if (!t->keys || !t->values) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void table_free(Table *t) {
    PyMem_Free(t->keys);
    PyMem_Free(t->values);
}

static inline size_t slot_of(uint64_t key, size_t mask) { return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & mask; }

static int table_grow(Table *t) {
    Table bigger;
    if (table_init(&bigger, 2 * (t->mask + 1)) < 0) {
        table_free(&bigger);
        return -1;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        if (!t->keys[i]) continue;
        size_t j = slot_of(t->keys[i], bigger.mask);
        while (bigger.keys[j]) j = (j + 1) & bigger.mask;
        bigger.keys[j] = t->keys[i];
        bigger.values[j] = t->values[i];
    }
    bigger.len = t->len;
    table_free(t);
    *t = bigger;
    return 0;
}

/* The index stored for key, or, when it is new, store len (the next index) and return it; -1 on error. */
static Py_ssize_t table_index(Table *t, uint64_t key) {
    size_t j = slot_of(key, t->mask);
    while (t->keys[j]) {
        if (t->keys[j] == key) return t->values[j];
        j = (j + 1) & t->mask;
    }
    if (2 * (size_t)(t->len + 1) > t->mask + 1) {
        if (table_grow(t) < 0) return -1;
        j = slot_of(key, t->mask);
        while (t->keys[j]) j = (j + 1) & t->mask;
    }
    t->keys[j] = key;
    t->values[j] = t->len;
    return t->len++;
}

/* -- sums of frequencies --------------------------------------------------------------------------------------- */
typedef struct {
    long long small;
    PyObject *big; /* the sum as a Python number once it left long long (or a frequency was not an int) */
} Sum;

static int sum_add(Sum *s, PyObject *freq) {
    if (!s->big) {
        if (PyLong_CheckExact(freq)) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(freq, &overflow), total;
            if (v == -1 && PyErr_Occurred()) return -1;
            if (!overflow && !__builtin_add_overflow(s->small, v, &total)) {
                s->small = total;
                return 0;
            }
        }
        s->big = PyLong_FromLongLong(s->small);
        if (!s->big) return -1;
    }
    PyObject *total = PyNumber_Add(s->big, freq);
    if (!total) return -1;
    Py_SETREF(s->big, total);
    return 0;
}

static PyObject *sum_value(const Sum *s) {
    if (s->big) return Py_NewRef(s->big);
    return PyLong_FromLongLong(s->small);
}

/* -- strings ----------------------------------------------------------------------------------------------------- */
static PyObject *pair_str(Py_UCS4 a, Py_UCS4 b) {
    PyObject *s = PyUnicode_New(2, a > b ? a : b);
    if (!s) return NULL;
    int kind = PyUnicode_KIND(s);
    void *data = PyUnicode_DATA(s);
    PyUnicode_WRITE(kind, data, 0, a);
    PyUnicode_WRITE(kind, data, 1, b);
    return s;
}

/* words[i] as a str, checked (borrowed) */
static PyObject *word_at(PyObject *words, Py_ssize_t i) {
    PyObject *word = PyList_GET_ITEM(words, i);
    if (!PyUnicode_Check(word)) {
        PyErr_Format(PyExc_TypeError, "word %zd is not a str", i);
        return NULL;
    }
    return word;
}

static int check_lists(PyObject *words, PyObject *freqs) {
    if (PyList_GET_SIZE(words) != PyList_GET_SIZE(freqs)) {
        PyErr_SetString(PyExc_ValueError, "words and freqs must have the same length");
        return -1;
    }
    return 0;
}

/* -- index_pairs ------------------------------------------------------------------------------------------------- */
typedef struct {
    Py_UCS4 a, b;
    Py_ssize_t n; /* occurrences */
    Sum sum;
    PyObject *list;
} PairEntry;

static PyObject *index_pairs(PyObject *self, PyObject *args) {
    PyObject *words, *freqs;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &words, &PyList_Type, &freqs)) return NULL;
    if (check_lists(words, freqs) < 0) return NULL;
    Py_ssize_t n_words = PyList_GET_SIZE(words), n_occ = 0;
    for (Py_ssize_t w = 0; w < n_words; w++) {
        PyObject *word = word_at(words, w);
        if (!word) return NULL;
        Py_ssize_t n = PyUnicode_GET_LENGTH(word);
        if (n > 1) n_occ += n - 1;
    }
    if ((uint64_t)n_occ > UINT32_MAX) { /* pairs are numbered in 32 bits */
        PyErr_SetString(PyExc_OverflowError, "index_pairs(): too many pairs");
        return NULL;
    }
    Table table = {0};
    PairEntry *pairs = NULL;
    Py_ssize_t n_pairs = 0, cap = 0;
    uint32_t *occ = PyMem_Malloc((n_occ ? n_occ : 1) * sizeof(uint32_t)); /* the pair of each occurrence */
    PyObject *where = NULL, *counts = NULL, *out = NULL;
    if (!occ || table_init(&table, 1024) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t w = 0; w < n_words; w++) {
        PyObject *word = PyList_GET_ITEM(words, w), *freq = PyList_GET_ITEM(freqs, w);
        Py_ssize_t n = PyUnicode_GET_LENGTH(word);
        int kind = PyUnicode_KIND(word);
        const void *data = PyUnicode_DATA(word);
        Py_UCS4 b = n ? PyUnicode_READ(kind, data, 0) : 0;
        for (Py_ssize_t i = 1; i < n; i++) {
            Py_UCS4 a = b;
            b = PyUnicode_READ(kind, data, i);
            Py_ssize_t p = table_index(&table, (((uint64_t)a << 21) | b) + 1);
            if (p < 0) goto done;
            if (p == n_pairs) {
                if (n_pairs == cap) {
                    cap = cap ? 2 * cap : 1024;
                    PairEntry *grown = PyMem_Realloc(pairs, cap * sizeof(PairEntry));
                    if (!grown) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    pairs = grown;
                }
                pairs[n_pairs++] = (PairEntry){a, b, 0, {0, NULL}, NULL};
            }
            pairs[p].n++;
            if (sum_add(&pairs[p].sum, freq) < 0) goto done;
            occ[k++] = (uint32_t)p;
        }
    }
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        pairs[p].list = PyList_New(pairs[p].n);
        if (!pairs[p].list) goto done;
        pairs[p].n = 0; /* now the number filled */
    }
    k = 0;
    for (Py_ssize_t w = 0; w < n_words; w++) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(PyList_GET_ITEM(words, w));
        if (n < 2) continue;
        PyObject *number = PyLong_FromSsize_t(w);
        if (!number) goto done;
        for (Py_ssize_t i = 1; i < n; i++) {
            PairEntry *e = &pairs[occ[k++]];
            PyList_SET_ITEM(e->list, e->n++, Py_NewRef(number));
        }
        Py_DECREF(number);
    }
    where = PyDict_New();
    counts = PyDict_New();
    if (!where || !counts) goto done;
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        PyObject *key = pair_str(pairs[p].a, pairs[p].b), *count = key ? sum_value(&pairs[p].sum) : NULL;
        int failed = !count || PyDict_SetItem(where, key, pairs[p].list) < 0 || PyDict_SetItem(counts, key, count) < 0;
        Py_XDECREF(key);
        Py_XDECREF(count);
        if (failed) goto done;
    }
    out = PyTuple_Pack(2, where, counts);
done:
    for (Py_ssize_t p = 0; p < n_pairs; p++) {
        Py_XDECREF(pairs[p].list);
        Py_XDECREF(pairs[p].sum.big);
    }
    PyMem_Free(pairs);
    PyMem_Free(occ);
    table_free(&table);
    Py_XDECREF(where);
    Py_XDECREF(counts);
    return out;
}

/* -- merge_words ------------------------------------------------------------------------------------------------- */
/* The words holding the new pair (c, new) or (new, c), per neighbour c, in the order neighbours are first met. */
typedef struct {
    Py_UCS4 c;
    Sum sum;
    PyObject *list;
} Group;

typedef struct {
    Table index;
    Group *items;
    Py_ssize_t len, cap;
} Groups;

static int groups_init(Groups *g) { return table_init(&g->index, 64); }

static void groups_free(Groups *g) {
    for (Py_ssize_t i = 0; i < g->len; i++) {
        Py_XDECREF(g->items[i].list);
        Py_XDECREF(g->items[i].sum.big);
    }
    PyMem_Free(g->items);
    table_free(&g->index);
}

/* The group of neighbour c, created when new; NULL on error. */
static Group *group_of(Groups *g, Py_UCS4 c) {
    Py_ssize_t i = table_index(&g->index, (uint64_t)c + 1);
    if (i < 0) return NULL;
    if (i == g->len) {
        if (g->len == g->cap) {
            Py_ssize_t cap = g->cap ? 2 * g->cap : 64;
            Group *grown = PyMem_Realloc(g->items, cap * sizeof(Group));
            if (!grown) {
                PyErr_NoMemory();
                return NULL;
            }
            g->items = grown;
            g->cap = cap;
        }
        PyObject *list = PyList_New(0);
        if (!list) return NULL;
        g->items[g->len++] = (Group){c, {0, NULL}, list};
    }
    return &g->items[i];
}

/* Word number (a Python int) and its frequency, added to the group of c in g. */
static int group_add(Groups *g, Py_UCS4 c, PyObject *number, PyObject *freq) {
    Group *group = group_of(g, c);
    if (!group || PyList_Append(group->list, number) < 0) return -1;
    return sum_add(&group->sum, freq);
}

/* where[came] = list and changes.append((gone, came, sum)), for the pairs (x, y) -> (u, v). */
static int record_change(PyObject *where, PyObject *changes, Py_UCS4 x, Py_UCS4 y, Py_UCS4 u, Py_UCS4 v,
                         PyObject *list, const Sum *sum) {
    PyObject *gone = pair_str(x, y), *came = gone ? pair_str(u, v) : NULL, *n = came ? sum_value(sum) : NULL;
    PyObject *change = n ? PyTuple_Pack(3, gone, came, n) : NULL;
    int failed = !change || PyDict_SetItem(where, came, list) < 0 || PyList_Append(changes, change) < 0;
    Py_XDECREF(gone);
    Py_XDECREF(came);
    Py_XDECREF(n);
    Py_XDECREF(change);
    return failed ? -1 : 0;
}

static PyObject *merge_words(PyObject *self, PyObject *args) {
    PyObject *words, *freqs, *where, *entries, *pair, *new;
    if (!PyArg_ParseTuple(args, "O!O!O!O!UU", &PyList_Type, &words, &PyList_Type, &freqs, &PyDict_Type, &where,
                          &PyList_Type, &entries, &pair, &new))
        return NULL;
    if (check_lists(words, freqs) < 0) return NULL;
    if (PyUnicode_GET_LENGTH(pair) != 2 || PyUnicode_GET_LENGTH(new) != 1) {
        PyErr_SetString(PyExc_ValueError, "merge_words(): pair must be two characters and new one");
        return NULL;
    }
    const Py_UCS4 a = PyUnicode_READ_CHAR(pair, 0), b = PyUnicode_READ_CHAR(pair, 1), x = PyUnicode_READ_CHAR(new, 0);
    Groups lefts = {0}, rights = {0}; /* freed whether or not they were set up */
    PyObject *doubles = NULL, *changes = NULL, *out = NULL;
    Sum doubled = {0, NULL};
    Py_UCS4 *buffer = NULL;
    Py_ssize_t buffer_len = 0, n_words = PyList_GET_SIZE(words);
    if (groups_init(&lefts) < 0 || groups_init(&rights) < 0) goto done;
    doubles = PyList_New(0);
    if (!doubles) goto done;
    for (Py_ssize_t e = 0; e < PyList_GET_SIZE(entries); e++) {
        PyObject *number = PyList_GET_ITEM(entries, e);
        Py_ssize_t w = PyLong_AsSsize_t(number);
        if (w == -1 && PyErr_Occurred()) goto done;
        if (w < 0) w += n_words; /* as words[w] reads it */
        if (w < 0 || w >= n_words) {
            PyErr_SetString(PyExc_IndexError, "merge_words(): an entry is not a word index");
            goto done;
        }
        PyObject *word = word_at(words, w);
        if (!word) goto done;
        Py_ssize_t n = PyUnicode_GET_LENGTH(word), i = 0;
        int kind = PyUnicode_KIND(word);
        const void *data = PyUnicode_DATA(word);
        while (i + 1 < n && !(PyUnicode_READ(kind, data, i) == a && PyUnicode_READ(kind, data, i + 1) == b)) i++;
        if (i + 1 >= n) continue; /* stale: the word lost the pair to an earlier merge (or to this one) */
        if (n > buffer_len) {
            Py_UCS4 *grown = PyMem_Realloc(buffer, n * sizeof(Py_UCS4));
            if (!grown) {
                PyErr_NoMemory();
                goto done;
            }
            buffer = grown;
            buffer_len = n;
        }
        /* the characters before the first occurrence, then every occurrence, left to right, without overlaps */
        Py_UCS4 max = x;
        Py_ssize_t len = 0, found = 0, first = i;
        for (Py_ssize_t j = 0; j < i; j++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, j);
            if (c > max) max = c;
            buffer[len++] = c;
        }
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c == a && i + 1 < n && PyUnicode_READ(kind, data, i + 1) == b) {
                buffer[len++] = x;
                found++;
                i += 2;
                continue;
            }
            if (c > max) max = c;
            buffer[len++] = c;
            i++;
        }
        PyObject *merged = PyUnicode_New(len, max);
        if (!merged) goto done;
        int merged_kind = PyUnicode_KIND(merged);
        void *merged_data = PyUnicode_DATA(merged);
        for (Py_ssize_t j = 0; j < len; j++) PyUnicode_WRITE(merged_kind, merged_data, j, buffer[j]);
        PyList_SetItem(words, w, merged); /* steals merged, drops the old word */
        PyObject *freq = PyList_GET_ITEM(freqs, w);
        if (found == 1) { /* the neighbours of the one occurrence, whatever they are */
            if (first > 0 && group_add(&lefts, buffer[first - 1], number, freq) < 0) goto done;
            if (first + 1 < len && group_add(&rights, buffer[first + 1], number, freq) < 0) goto done;
            continue;
        }
        for (Py_ssize_t j = 0; j < len; j++) { /* every new character, and a neighbour that is one: (x x) */
            if (buffer[j] != x) continue;
            if (j > 0) {
                if (buffer[j - 1] == x) {
                    if (PyList_Append(doubles, number) < 0 || sum_add(&doubled, freq) < 0) goto done;
                } else if (group_add(&lefts, buffer[j - 1], number, freq) < 0) {
                    goto done;
                }
            }
            if (j + 1 < len && buffer[j + 1] != x && group_add(&rights, buffer[j + 1], number, freq) < 0) goto done;
        }
    }
    changes = PyList_New(0);
    if (!changes) goto done;
    for (Py_ssize_t g = 0; g < lefts.len; g++) {
        Group *l = &lefts.items[g];
        if (record_change(where, changes, l->c, a, l->c, x, l->list, &l->sum) < 0) goto done;
    }
    for (Py_ssize_t g = 0; g < rights.len; g++) {
        Group *r = &rights.items[g];
        if (record_change(where, changes, b, r->c, x, r->c, r->list, &r->sum) < 0) goto done;
    }
    if (PyList_GET_SIZE(doubles) && record_change(where, changes, b, a, x, x, doubles, &doubled) < 0) goto done;
    out = Py_NewRef(changes);
done:
    groups_free(&lefts);
    groups_free(&rights);
    Py_XDECREF(doubles);
    Py_XDECREF(doubled.big);
    Py_XDECREF(changes);
    PyMem_Free(buffer);
    return out;
}

static PyMethodDef methods[] = {
    {"index_pairs", index_pairs, METH_VARARGS,
     "index_pairs(words, freqs) -> (where, counts): every adjacent pair of the words, where it is and its count."},
    {"merge_words", merge_words, METH_VARARGS,
     "merge_words(words, freqs, where, entries, pair, new) -> changes: merge pair into new in the words of entries."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_words", "The compiled twin of words.py's word loops.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__words(void) { return PyModule_Create(&module); }
