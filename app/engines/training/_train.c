/* The compiled twins of the training core's hot loops (app/engines/training): the two loops of words.py that visit
 * every word (ShortWords: the first count of every pair, and one merge), and the counting loop of pair_counts.py
 * (PairCounts.apply). Words are strings with one character per id; a pair is keyed by its two characters as a str.
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
 *   apply_counts(counts, buckets, ranked, ranked_count, changes) -> entering
 *     Moves each pair of changes to its new count in counts and buckets (count -> set of pairs), takes those
 *     leaving ranked_count out of the list ranked, and returns the set of those reaching it.
 *
 *   rescore(keys, counts, parts, live, heap)   (parts: a list indexed by id, or a mapping)
 *     The WordPiece trainer's scoring loop (ScoredPairs.rescore): each pair of keys that still has a count gets the
 *     entry (-count / (parts[a] * parts[b]), pair) in live and pushed on the heap (a list kept as heapq keeps it),
 *     unless its entry in live has that score already; a pair without a count leaves live.
 *
 * Each gives exactly what its Python twin (index_pairs_python, merge_words_python, apply_counts_python,
 * rescore_python) gives for the same input: tests/engines/test_training_c.py and tests/engines/test_wordpiece_trainer.py check it
 * on random inputs, and every trainer test runs through them.
 * Pairs and neighbours are grouped in small hash tables keyed by code points, so no key string is built per
 * occurrence, only one per distinct pair. Frequencies are added as C integers while they fit, as Python numbers
 * after.
 */
#include "twins.h"
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
    return !t->keys || !t->values ? no_memory() : 0;
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

/* The characters of word copied into *buffer (grown as needed): their number, or -1 on error. Loops over a
 * Py_UCS4 array run faster than reads that ask for the string's width at every character. */
static Py_ssize_t read_word(PyObject *word, Py_UCS4 **buffer, Py_ssize_t *cap) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    if (grow_array(buffer, cap, n, sizeof(Py_UCS4), 0) < 0) return -1;
    return n && !PyUnicode_AsUCS4(word, *buffer, *cap, 0) ? -1 : n;
}

static int check_lists(PyObject *words, PyObject *freqs) {
    if (PyList_GET_SIZE(words) != PyList_GET_SIZE(freqs))
        return raise_error(PyExc_ValueError, "words and freqs must have the same length");
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
    Py_UCS4 *buffer = NULL;
    Py_ssize_t n_pairs = 0, cap = 0, buffer_len = 0;
    uint32_t *occ = PyMem_Malloc((n_occ ? n_occ : 1) * sizeof(uint32_t)); /* the pair of each occurrence */
    PyObject *where = NULL, *counts = NULL, *out = NULL;
    if (!occ || table_init(&table, 1024) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t w = 0; w < n_words; w++) {
        PyObject *freq = PyList_GET_ITEM(freqs, w);
        Py_ssize_t n = read_word(PyList_GET_ITEM(words, w), &buffer, &buffer_len);
        if (n < 0) goto done;
        for (Py_ssize_t i = 1; i < n; i++) {
            Py_UCS4 a = buffer[i - 1], b = buffer[i];
            Py_ssize_t p = table_index(&table, (((uint64_t)a << 21) | b) + 1);
            if (p < 0) goto done;
            if (p == n_pairs) {
                if (GROW(pairs, cap, n_pairs + 1, 1024) < 0) goto done;
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
    PyMem_Free(buffer);
    PyMem_Free(occ);
    table_free(&table);
    Py_XDECREF(where);
    Py_XDECREF(counts);
    return out;
}

/* -- merge_words ------------------------------------------------------------------------------------------------- */
/* The characters of s[0..n) with every (a b), left to right and without overlaps, made x, written to out: their
 * number, or -1 when s does not hold the pair. *first is the position of the first x, *found the number of
 * occurrences and *max the largest character written. One function per string width, so that the loops read
 * plain arrays. */
#define DEFINE_MERGE_CHARS(T)                                                                                        \
    static Py_ssize_t merge_chars_##T(const T *s, Py_ssize_t n, Py_UCS4 a, Py_UCS4 b, Py_UCS4 x, Py_UCS4 *out,     \
                                      Py_ssize_t *first, Py_ssize_t *found, Py_UCS4 *max) {                        \
        Py_ssize_t i = 0, len = 0;                                                                                 \
        while (i + 1 < n && !(s[i] == a && s[i + 1] == b)) i++;                                                    \
        if (i + 1 >= n) return -1;                                                                                 \
        Py_UCS4 top = x;                                                                                           \
        for (; len < i; len++) {                                                                                   \
            out[len] = s[len];                                                                                     \
            if (s[len] > top) top = s[len];                                                                        \
        }                                                                                                          \
        *first = i;                                                                                                \
        *found = 0;                                                                                                \
        while (i < n) {                                                                                            \
            if (s[i] == a && i + 1 < n && s[i + 1] == b) {                                                         \
                out[len++] = x;                                                                                    \
                ++*found;                                                                                          \
                i += 2;                                                                                            \
            } else {                                                                                               \
                if (s[i] > top) top = s[i];                                                                        \
                out[len++] = s[i++];                                                                               \
            }                                                                                                      \
        }                                                                                                          \
        *max = top;                                                                                                \
        return len;                                                                                                \
    }
DEFINE_MERGE_CHARS(Py_UCS1)
DEFINE_MERGE_CHARS(Py_UCS2)
DEFINE_MERGE_CHARS(Py_UCS4)

/* word with (a b) merged into x as a new str, its characters left in out (of at least the word's length); *len
 * is -1 when the word does not hold the pair (then NULL is returned without an error). */
static PyObject *merged_word(PyObject *word, Py_UCS4 a, Py_UCS4 b, Py_UCS4 x, Py_UCS4 *out, Py_ssize_t *len,
                             Py_ssize_t *first, Py_ssize_t *found) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    Py_UCS4 max = 0;
    switch (PyUnicode_KIND(word)) {
    case PyUnicode_1BYTE_KIND:
        *len = merge_chars_Py_UCS1(PyUnicode_1BYTE_DATA(word), n, a, b, x, out, first, found, &max);
        break;
    case PyUnicode_2BYTE_KIND:
        *len = merge_chars_Py_UCS2(PyUnicode_2BYTE_DATA(word), n, a, b, x, out, first, found, &max);
        break;
    default:
        *len = merge_chars_Py_UCS4(PyUnicode_4BYTE_DATA(word), n, a, b, x, out, first, found, &max);
    }
    if (*len < 0) return NULL;
    PyObject *merged = PyUnicode_New(*len, max);
    if (!merged) return NULL;
    switch (PyUnicode_KIND(merged)) {
    case PyUnicode_1BYTE_KIND:
        for (Py_ssize_t i = 0; i < *len; i++) PyUnicode_1BYTE_DATA(merged)[i] = (Py_UCS1)out[i];
        break;
    case PyUnicode_2BYTE_KIND:
        for (Py_ssize_t i = 0; i < *len; i++) PyUnicode_2BYTE_DATA(merged)[i] = (Py_UCS2)out[i];
        break;
    default:
        memcpy(PyUnicode_4BYTE_DATA(merged), out, *len * sizeof(Py_UCS4));
    }
    return merged;
}

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
        if (GROW(g->items, g->cap, g->len + 1, 64) < 0) return NULL;
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
    if (PyUnicode_GET_LENGTH(pair) != 2 || PyUnicode_GET_LENGTH(new) != 1)
        return raise_error(PyExc_ValueError, "merge_words(): pair must be two characters and new one"), NULL;
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
        Py_ssize_t n = PyUnicode_GET_LENGTH(word), len, first, found;
        if (n > buffer_len) {
            if (resize_array(&buffer, 2 * n, sizeof(Py_UCS4)) < 0) goto done;
            buffer_len = 2 * n;
        }
        PyObject *merged = merged_word(word, a, b, x, buffer, &len, &first, &found);
        if (!merged) {
            if (len < 0) continue; /* stale: the word lost the pair to an earlier merge (or to this one) */
            goto done;
        }
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

/* -- apply_counts ------------------------------------------------------------------------------------------------ */
/* Counts stay Python numbers, compared and added as Python does (ints of any size, or whatever a caller passed):
 * what costs in the Python loop is the interpreter around the dict and set calls, not the arithmetic. */
typedef struct {
    PyObject *counts, *buckets, *ranked, *ranked_count, *entering, *zero, *one;
} Counts;

/* x == y or x > y (op Py_EQ or Py_GT), in C when both are ints that fit a long long */
static int compare(PyObject *x, PyObject *y, int op) {
    if (PyLong_CheckExact(x) && PyLong_CheckExact(y)) {
        int x_over, y_over;
        long long u = PyLong_AsLongLongAndOverflow(x, &x_over), v = PyLong_AsLongLongAndOverflow(y, &y_over);
        if (!x_over && !y_over) return op == Py_EQ ? u == v : u > v;
    }
    return PyObject_RichCompareBool(x, y, op);
}

static int greater_than_one(const Counts *c, PyObject *n) { return compare(n, c->one, Py_GT); }

static int is_ranked_count(const Counts *c, PyObject *n) { return compare(n, c->ranked_count, Py_EQ); }

/* buckets[count].discard(pair) */
static int bucket_discard(const Counts *c, PyObject *count, PyObject *pair) {
    PyObject *bucket = PyDict_GetItemWithError(c->buckets, count); /* borrowed */
    if (!bucket) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, count);
        return -1;
    }
    if (!PySet_Check(bucket)) return raise_error(PyExc_TypeError, "apply_counts(): buckets must hold sets");
    return PySet_Discard(bucket, pair) < 0 ? -1 : 0;
}

/* pair goes in the bucket of count (_enter) */
static int bucket_enter(const Counts *c, PyObject *count, PyObject *pair) {
    PyObject *bucket = PyDict_GetItemWithError(c->buckets, count); /* borrowed */
    if (bucket) {
        if (!PySet_Check(bucket)) return raise_error(PyExc_TypeError, "apply_counts(): buckets must hold sets");
        return PySet_Add(bucket, pair);
    }
    if (PyErr_Occurred()) return -1;
    bucket = PySet_New(NULL);
    int failed = !bucket || PySet_Add(bucket, pair) < 0 || PyDict_SetItem(c->buckets, count, bucket) < 0;
    Py_XDECREF(bucket);
    return failed ? -1 : 0;
}

/* pair gets count, out of its old bucket already (_set) */
static int set_count(const Counts *c, PyObject *pair, PyObject *count) {
    int above = greater_than_one(c, count);
    if (above < 0) return -1;
    if (above) return PyDict_SetItem(c->counts, pair, count) < 0 ? -1 : bucket_enter(c, count, pair);
    int nonzero = PyObject_IsTrue(count);
    if (nonzero < 0) return -1;
    return nonzero ? PyDict_SetItem(c->counts, pair, c->one) : PyDict_DelItem(c->counts, pair);
}

/* pair goes from old to new (_move) */
static int move(const Counts *c, PyObject *pair, PyObject *old, PyObject *new) {
    int at = is_ranked_count(c, old);
    if (at < 0) return -1;
    if (at) {
        int entered = PySet_Contains(c->entering, pair);
        if (entered < 0) return -1;
        if (entered) {
            if (PySet_Discard(c->entering, pair) < 0) return -1;
        } else {
            PyObject *done = PyObject_CallMethod(c->ranked, "remove", "O", pair);
            if (!done) return -1;
            Py_DECREF(done);
        }
    }
    int above = greater_than_one(c, old);
    if (above < 0 || (above && bucket_discard(c, old, pair) < 0)) return -1;
    at = is_ranked_count(c, new);
    if (at < 0 || (at && PySet_Add(c->entering, pair) < 0)) return -1;
    return set_count(c, pair, new);
}

/* One change: n occurrences of gone became came. */
static int apply_change(const Counts *c, PyObject *gone, PyObject *came, PyObject *n) {
    PyObject *old = PyDict_GetItemWithError(c->counts, gone), *new = NULL;
    if (!old && PyErr_Occurred()) return -1;
    int failed = 0;
    if (old) {
        Py_INCREF(old); /* counts[gone] is replaced below */
        new = PyNumber_Subtract(old, n);
        int at_old = new ? is_ranked_count(c, old) : -1, at_new = at_old == 0 ? is_ranked_count(c, new) : 0;
        if (at_old < 0 || at_new < 0) {
            failed = 1;
        } else if (at_old || at_new) {
            failed = move(c, gone, old, new) < 0;
        } else {
            int above = greater_than_one(c, old);
            failed = above < 0 || (above && bucket_discard(c, old, gone) < 0) || set_count(c, gone, new) < 0;
        }
        Py_DECREF(old);
        Py_XDECREF(new);
        if (failed) return -1;
    }
    int counted = PyDict_Contains(c->counts, came), entering = counted ? 0 : is_ranked_count(c, n);
    if (counted < 0 || entering < 0) return -1;
    if (counted || entering) { /* another layout made it too, or it enters the ranked bucket */
        old = PyDict_GetItemWithError(c->counts, came);
        if (!old && PyErr_Occurred()) return -1;
        old = old ? Py_NewRef(old) : Py_NewRef(c->zero);
        new = PyNumber_Add(old, n);
        failed = !new || move(c, came, old, new) < 0;
        Py_DECREF(old);
        Py_XDECREF(new);
        return failed ? -1 : 0;
    }
    if (PyDict_SetItem(c->counts, came, n) < 0) return -1; /* a pair first seen now: the common case */
    int above = greater_than_one(c, n);
    return above < 0 || (above && bucket_enter(c, n, came) < 0) ? -1 : 0;
}

static PyObject *apply_counts(PyObject *self, PyObject *args) {
    Counts c = {0};
    PyObject *changes;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyDict_Type, &c.counts, &PyDict_Type, &c.buckets, &PyList_Type, &c.ranked,
                          &c.ranked_count, &changes))
        return NULL;
    PyObject *iter = PyObject_GetIter(changes);
    if (!iter) return NULL;
    c.entering = PySet_New(NULL);
    c.zero = PyLong_FromLong(0);
    c.one = PyLong_FromLong(1);
    PyObject *item = NULL;
    int failed = !c.entering || !c.zero || !c.one;
    while (!failed && (item = PyIter_Next(iter))) {
        PyObject *fields = PySequence_Fast(item, "apply_counts(): a change must be (old pair, new pair, n)");
        if (!fields || PySequence_Fast_GET_SIZE(fields) != 3) {
            if (fields) PyErr_SetString(PyExc_ValueError, "apply_counts(): a change must be (old pair, new pair, n)");
            failed = 1;
        } else {
            PyObject **f = PySequence_Fast_ITEMS(fields);
            failed = apply_change(&c, f[0], f[1], f[2]) < 0;
        }
        Py_XDECREF(fields);
        Py_DECREF(item);
    }
    Py_DECREF(iter);
    Py_XDECREF(c.zero);
    Py_XDECREF(c.one);
    if (failed || PyErr_Occurred()) {
        Py_XDECREF(c.entering);
        return NULL;
    }
    return c.entering;
}

/* -- rescore: WordPiece's scores ------------------------------------------------------------------------------ */
static int entry_less(PyObject *x, PyObject *y) { /* x < y for (float, str) entries, as tuples compare */
    if (PyTuple_CheckExact(x) && PyTuple_CheckExact(y) && PyTuple_GET_SIZE(x) == 2 && PyTuple_GET_SIZE(y) == 2 &&
        PyFloat_CheckExact(PyTuple_GET_ITEM(x, 0)) && PyFloat_CheckExact(PyTuple_GET_ITEM(y, 0))) {
        double a = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(x, 0)), b = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(y, 0));
        if (a != b) return a < b;
        return PyObject_RichCompareBool(PyTuple_GET_ITEM(x, 1), PyTuple_GET_ITEM(y, 1), Py_LT);
    }
    return PyObject_RichCompareBool(x, y, Py_LT);
}

static int heap_push(PyObject *heap, PyObject *item) { /* heapq.heappush: append, then sift towards the root */
    if (PyList_Append(heap, item) < 0) return -1;
    Py_ssize_t pos = PyList_GET_SIZE(heap) - 1;
    while (pos > 0) {
        Py_ssize_t parent = (pos - 1) >> 1;
        PyObject **items = PySequence_Fast_ITEMS(heap); /* again each time: a comparison may run Python code */
        int less = entry_less(item, items[parent]);
        if (less < 0) return -1;
        if (!less || pos >= PyList_GET_SIZE(heap)) break;
        items = PySequence_Fast_ITEMS(heap);
        PyObject *up = items[parent];
        items[parent] = items[pos]; /* the list owns one reference to each: swapping keeps them */
        items[pos] = up;
        pos = parent;
    }
    return 0;
}

static PyObject *part_count(PyObject *parts, Py_UCS4 id) { /* parts[id], a new reference */
    if (PyList_CheckExact(parts) && (Py_ssize_t)id < PyList_GET_SIZE(parts)) { /* the trainer's list: no int built */
        PyObject *value = PyList_GET_ITEM(parts, id);
        Py_INCREF(value);
        return value;
    }
    PyObject *key = PyLong_FromUnsignedLong(id);
    if (!key) return NULL;
    PyObject *value = PyObject_GetItem(parts, key); /* a Counter answers 0 for a missing id */
    Py_DECREF(key);
    return value;
}

static PyObject *negated_score(PyObject *count, PyObject *a, PyObject *b) { /* -count / (a * b), as Python does it */
    int overflow = 0;
    long long c = PyLong_AsLongLongAndOverflow(count, &overflow), x, y, product;
    if (!overflow && c >= 0 && c < (1LL << 53)) {
        x = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (!overflow) y = PyLong_AsLongLongAndOverflow(b, &overflow);
        if (!overflow && x > 0 && y > 0 && !__builtin_mul_overflow(x, y, &product) && product < (1LL << 53))
            return PyFloat_FromDouble((double)-c / (double)product); /* both exact as doubles: one rounding */
    }
    if (PyErr_Occurred()) return NULL;
    PyObject *negated = PyNumber_Negative(count), *denominator = PyNumber_Multiply(a, b), *score = NULL;
    if (negated && denominator) score = PyNumber_TrueDivide(negated, denominator);
    Py_XDECREF(negated);
    Py_XDECREF(denominator);
    return score;
}

static int rescore_one(PyObject *key, PyObject *counts, PyObject *parts, PyObject *live, PyObject *heap) {
    PyObject *count = PyDict_GetItemWithError(counts, key);
    if (!count && PyErr_Occurred()) return -1;
    int occurs = count ? PyObject_IsTrue(count) : 0;
    if (occurs < 0) return -1;
    if (!occurs) {
        if (PyDict_DelItem(live, key) < 0) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
            PyErr_Clear();
        }
        return 0;
    }
    if (!PyUnicode_Check(key) || PyUnicode_GET_LENGTH(key) != 2)
        return raise_error(PyExc_ValueError, "rescore(): a pair must be a str of two characters");
    Py_INCREF(count); /* the dict's may go while Python code runs */
    PyObject *a = part_count(parts, PyUnicode_READ_CHAR(key, 0));
    PyObject *b = a ? part_count(parts, PyUnicode_READ_CHAR(key, 1)) : NULL;
    PyObject *score = b ? negated_score(count, a, b) : NULL;
    Py_DECREF(count);
    Py_XDECREF(a);
    Py_XDECREF(b);
    if (!score) return -1;
    PyObject *old = PyDict_GetItemWithError(live, key);
    int failed = 0;
    if (!old && PyErr_Occurred()) {
        failed = 1;
    } else {
        int same = 0;
        if (old) {
            PyObject *old_score = PySequence_GetItem(old, 0);
            same = old_score ? PyObject_RichCompareBool(old_score, score, Py_EQ) : -1;
            Py_XDECREF(old_score);
        }
        if (same < 0) {
            failed = 1;
        } else if (!same) { /* an unchanged score keeps its entry, wherever it is */
            PyObject *entry = PyTuple_Pack(2, score, key);
            failed = !entry || PyDict_SetItem(live, key, entry) < 0 || heap_push(heap, entry) < 0;
            Py_XDECREF(entry);
        }
    }
    Py_DECREF(score);
    return failed ? -1 : 0;
}

static PyObject *rescore(PyObject *self, PyObject *args) {
    PyObject *keys, *counts, *parts, *live, *heap;
    if (!PyArg_ParseTuple(args, "OO!OO!O!", &keys, &PyDict_Type, &counts, &parts, &PyDict_Type, &live, &PyList_Type,
                          &heap))
        return NULL;
    PyObject *iter = PyObject_GetIter(keys);
    if (!iter) return NULL;
    PyObject *key;
    int failed = 0;
    while (!failed && (key = PyIter_Next(iter))) {
        failed = rescore_one(key, counts, parts, live, heap) < 0;
        Py_DECREF(key);
    }
    Py_DECREF(iter);
    if (failed || PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"index_pairs", index_pairs, METH_VARARGS,
     "index_pairs(words, freqs) -> (where, counts): every adjacent pair of the words, where it is and its count."},
    {"merge_words", merge_words, METH_VARARGS,
     "merge_words(words, freqs, where, entries, pair, new) -> changes: merge pair into new in the words of entries."},
    {"apply_counts", apply_counts, METH_VARARGS,
     "apply_counts(counts, buckets, ranked, ranked_count, changes) -> the pairs that reach ranked_count."},
    {"rescore", rescore, METH_VARARGS,
     "rescore(keys, counts, parts, live, heap): give each pair of keys its WordPiece score entry (see the header)."},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE(_train, "The compiled twins of the training core's loops.", methods)
