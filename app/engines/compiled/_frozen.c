/* The frozen containers, FrozenMap, FrozenList and FrozenIdMap: a tokenizer's big read-only containers as sections of
 * a table file, read in place (their layouts, and how a map is looked up, are in frozen.h, which the merge loop
 * app/engines/_merge.c includes too; app/engines/registry/table_files.py builds and maps them).
 *
 * Built as app.engines.compiled._frozen, found as twin("_frozen", "FrozenMap") (app/engines/compiled/__init__.py).
 */
#include "twins.h"
#include "frozen.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char MAP_MAGIC[8] = "TPFMAP1";
static const char LIST_MAGIC[8] = "TPFLST1";

static PyTypeObject FrozenMapType, FrozenListType, FrozenIdMapType, FrozenIterType;

/* The bytes of one part of a key: a bytes object's own, or a str's UTF-8 (lone surrogates passed through, in a new
 * bytes object left in *owner). 1, 0 when `obj` is not of the kind (the key then is in no map), -1 on error. */
static int key_part(PyObject *obj, int is_str, const char **data, Py_ssize_t *len, PyObject **owner) {
    *owner = NULL;
    if (!is_str) {
        if (!PyBytes_Check(obj)) return 0;
        *data = PyBytes_AS_STRING(obj);
        *len = PyBytes_GET_SIZE(obj);
        return 1;
    }
    if (!PyUnicode_Check(obj)) return 0;
    *data = PyUnicode_AsUTF8AndSize(obj, len);
    if (*data) return 1;
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
    PyErr_Clear();
    *owner = PyUnicode_AsEncodedString(obj, "utf-8", "surrogatepass");
    if (!*owner) return -1;
    *data = PyBytes_AS_STRING(*owner);
    *len = PyBytes_GET_SIZE(*owner);
    return 1;
}

/* Find a Python key: 1 with *found set, 0 when it is not there (or not a key of this map's kind), -1 on error. */
static int map_lookup(const FrozenMap *m, PyObject *key, const MapEntry **found) {
    int kind = (int)m->head->key_kind, is_str = kind & 1;
    PyObject *left = key, *right = NULL, *own_a = NULL, *own_b = NULL;
    const char *a, *b = NULL;
    Py_ssize_t na, nb = 0;
    if (kind & 2) {
        if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) return 0;
        left = PyTuple_GET_ITEM(key, 0);
        right = PyTuple_GET_ITEM(key, 1);
    }
    int ok = key_part(left, is_str, &a, &na, &own_a);
    if (ok > 0 && right) ok = key_part(right, is_str, &b, &nb, &own_b);
    if (ok > 0) {
        *found = map_find(m, (const unsigned char *)a, (size_t)na, (const unsigned char *)b, (size_t)nb);
        ok = *found != NULL;
    }
    Py_XDECREF(own_a);
    Py_XDECREF(own_b);
    return ok;
}

static PyObject *decode_part(const unsigned char *p, size_t n, int is_str) {
    if (is_str) return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "surrogatepass");
    return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

/* The key of entry `e` as a Python object. */
static PyObject *map_key(const FrozenMap *m, const MapEntry *e) {
    int kind = (int)m->head->key_kind, is_str = kind & 1;
    if ((uint64_t)e->offset + e->length > m->head->blob_len) return raise_error(PyExc_ValueError, "damaged table"), NULL;
    const unsigned char *k = m->blob + e->offset;
    if (!(kind & 2)) return decode_part(k, e->length, is_str);
    uint32_t left;
    if (e->length < 4) return raise_error(PyExc_ValueError, "damaged table"), NULL;
    memcpy(&left, k, 4);
    if ((uint64_t)left + 4 > e->length) return raise_error(PyExc_ValueError, "damaged table"), NULL;
    PyObject *a = decode_part(k + 4, left, is_str);
    PyObject *b = a ? decode_part(k + 4 + left, e->length - 4 - left, is_str) : NULL;
    PyObject *pair = b ? PyTuple_Pack(2, a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return pair;
}

/* The `buffer` argument of FrozenMap(buffer) or FrozenList(buffer) (`what`), taken as a section that starts with
 * `magic`: the object's view (*view, *has_view) released first if it had one, then filled. -1 with an error set
 * on failure (*has_view is then 0; the caller sets it once it has checked the section's header). */
static int take_view(PyObject *args, PyObject *kwargs, Py_buffer *view, int *has_view, const char *magic,
                     const char *what) {
    PyObject *buffer;
    static char *names[] = {"buffer", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", names, &buffer)) return -1;
    if (*has_view) {
        PyBuffer_Release(view);
        *has_view = 0;
    }
    if (PyObject_GetBuffer(buffer, view, PyBUF_SIMPLE) < 0) return -1;
    if (view->len < FROZEN_HEADER || memcmp(view->buf, magic, 8) != 0 || ((uintptr_t)view->buf & 7) != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "not a %s section (or not 8-byte aligned)", what);
        return -1;
    }
    return 0;
}

static int frozen_map_init(FrozenMap *self, PyObject *args, PyObject *kwargs) {
    if (take_view(args, kwargs, &self->view, &self->has_view, MAP_MAGIC, "FrozenMap") < 0) return -1;
    const MapHeader *h = self->view.buf;
    uint64_t len = (uint64_t)self->view.len;
    int bad = h->key_kind > 3 || h->value_kind > 1 || h->slot_bits < 1 || h->slot_bits > 32 || h->count >= (1ULL << h->slot_bits);
    if (!bad) {
        uint64_t need = FROZEN_HEADER + (4ULL << h->slot_bits) + h->count * sizeof(MapEntry) + h->blob_len;
        bad = h->blob_len > len || need != len;
    }
    if (bad) {
        PyBuffer_Release(&self->view);
        return raise_error(PyExc_ValueError, "FrozenMap: the section's header does not fit its size");
    }
    self->has_view = 1;
    self->head = h;
    self->mask = (1ULL << h->slot_bits) - 1;
    self->slots = (const uint32_t *)((const char *)h + FROZEN_HEADER);
    self->entries = (const MapEntry *)(self->slots + (1ULL << h->slot_bits));
    self->blob = (const unsigned char *)(self->entries + h->count);
    return 0;
}

static void frozen_dealloc(PyObject *self) {
    FrozenMap *m = (FrozenMap *)self; /* FrozenList starts the same way */
    if (m->has_view) PyBuffer_Release(&m->view);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t frozen_map_len(FrozenMap *m) { return frozen_map_ready(m) ? (Py_ssize_t)m->head->count : -1; }

/* The [], `in` and get() of a read-only mapping (`prefix` frozen_map or frozen_idmap, over an `Object`): `ready`
 * says it holds a section (else an error is set), `find` looks a key up (-1 on error, 0 when absent, 1 with where it
 * is in a `Where`), `value` reads the value there. */
#define FROZEN_LOOKUPS(prefix, Object, Where, ready, find, value)                                            \
    static PyObject *prefix##_subscript(Object *self, PyObject *key) {                                      \
        Where at;                                                                                           \
        if (!ready(self)) return NULL;                                                                      \
        int found = find(self, key, &at);                                                                   \
        if (found < 0) return NULL;                                                                         \
        if (!found) {                                                                                       \
            PyErr_SetObject(PyExc_KeyError, key);                                                           \
            return NULL;                                                                                    \
        }                                                                                                   \
        return value(self, at);                                                                             \
    }                                                                                                       \
    static int prefix##_contains(Object *self, PyObject *key) {                                             \
        Where at;                                                                                           \
        return ready(self) ? find(self, key, &at) : -1;                                                     \
    }                                                                                                       \
    static PyObject *prefix##_get(Object *self, PyObject *const *args, Py_ssize_t nargs) {                 \
        if (nargs < 1 || nargs > 2) return raise_error(PyExc_TypeError, "get(key, default=None)"), NULL;    \
        Where at;                                                                                           \
        if (!ready(self)) return NULL;                                                                      \
        int found = find(self, args[0], &at);                                                               \
        if (found < 0) return NULL;                                                                         \
        if (found) return value(self, at);                                                                  \
        PyObject *fallback = nargs == 2 ? args[1] : Py_None;                                                \
        Py_INCREF(fallback);                                                                                \
        return fallback;                                                                                    \
    }

FROZEN_LOOKUPS(frozen_map, FrozenMap, const MapEntry *, frozen_map_ready, map_lookup, map_value)

/* -- building a map -- */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Bytes;

static int bytes_add(Bytes *b, const void *p, size_t n) {
    if (GROW(b->data, b->cap, b->len + (Py_ssize_t)n, 4096) < 0) return -1;
    memcpy(b->data + b->len, p, n);
    b->len += (Py_ssize_t)n;
    return 0;
}

/* The kind of a key: KEY_BYTES..KEY_STR_PAIR, or -1 for a key no map holds. */
static int kind_of(PyObject *key) {
    if (PyBytes_CheckExact(key)) return KEY_BYTES;
    if (PyUnicode_CheckExact(key)) return KEY_STR;
    if (PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2) {
        int a = kind_of(PyTuple_GET_ITEM(key, 0)), b = kind_of(PyTuple_GET_ITEM(key, 1));
        if (a == b && (a == KEY_BYTES || a == KEY_STR)) return a | 2;
    }
    return -1;
}

static int slot_bits_for(uint64_t count) {
    int bits = 4;
    while ((1ULL << bits) < 2 * count) bits++;
    return bits;
}

static PyObject *frozen_map_build(PyObject *cls, PyObject *dict) {
    if (!PyDict_Check(dict)) return raise_error(PyExc_TypeError, "FrozenMap.build() takes a dict"), NULL;
    Py_ssize_t n = PyDict_GET_SIZE(dict), pos = 0;
    if ((uint64_t)n >= UINT32_MAX / 2) return raise_error(PyExc_TypeError, "too many keys for a FrozenMap"), NULL;
    int kind = -1, value_kind = VALUE_INT;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        int k = kind_of(key);
        if (k < 0 || (kind >= 0 && k != kind))
            return raise_error(PyExc_TypeError, "FrozenMap keys are all bytes, all str, or all pairs of one of them"), NULL;
        kind = k;
        if (PyFloat_CheckExact(value)) value_kind = VALUE_FLOAT;
        else if (!PyLong_CheckExact(value)) return raise_error(PyExc_TypeError, "FrozenMap values are ints or floats"), NULL;
    }
    if (kind < 0) kind = KEY_BYTES;
    Bytes blob = {0};
    MapEntry *entries = PyMem_Calloc(n ? n : 1, sizeof(MapEntry));
    PyObject *out = NULL;
    if (!entries) {
        PyErr_NoMemory();
        goto done;
    }
    pos = 0;
    for (Py_ssize_t i = 0; PyDict_Next(dict, &pos, &key, &value); i++) {
        PyObject *left = key, *right = NULL, *own_a = NULL, *own_b = NULL;
        const char *a, *b = NULL;
        Py_ssize_t na, nb = 0;
        if (kind & 2) {
            left = PyTuple_GET_ITEM(key, 0);
            right = PyTuple_GET_ITEM(key, 1);
        }
        int ok = key_part(left, kind & 1, &a, &na, &own_a) > 0 && (!right || key_part(right, kind & 1, &b, &nb, &own_b) > 0);
        Py_ssize_t start = blob.len;
        if (ok && (kind & 2)) {
            uint32_t len = (uint32_t)na;
            ok = bytes_add(&blob, &len, 4) == 0;
        }
        ok = ok && bytes_add(&blob, a, (size_t)na) == 0 && (!right || bytes_add(&blob, b, (size_t)nb) == 0);
        Py_XDECREF(own_a);
        Py_XDECREF(own_b);
        if (!ok) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a FrozenMap key cannot be stored");
            goto done;
        }
        if ((uint64_t)blob.len >= UINT32_MAX) {
            PyErr_SetString(PyExc_TypeError, "the keys are too long for a FrozenMap");
            goto done;
        }
        entries[i].offset = (uint32_t)start;
        entries[i].length = (uint32_t)(blob.len - start);
        if (value_kind == VALUE_FLOAT) {
            entries[i].value.f = PyFloat_AsDouble(value);
        } else {
            int overflow;
            entries[i].value.i = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow) {
                PyErr_SetString(PyExc_TypeError, "a FrozenMap value does not fit 64 bits");
                goto done;
            }
        }
        if (PyErr_Occurred()) goto done;
    }
    int bits = slot_bits_for((uint64_t)n);
    uint64_t slots_len = 4ULL << bits;
    size_t size = FROZEN_HEADER + slots_len + (size_t)n * sizeof(MapEntry) + (size_t)blob.len;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    memset(p, 0, FROZEN_HEADER + slots_len);
    MapHeader *h = (MapHeader *)p;
    memcpy(h->magic, MAP_MAGIC, 8);
    h->key_kind = (uint32_t)kind;
    h->value_kind = (uint32_t)value_kind;
    h->count = (uint64_t)n;
    h->slot_bits = (uint64_t)bits;
    h->blob_len = (uint64_t)blob.len;
    uint32_t *slots = (uint32_t *)(p + FROZEN_HEADER);
    memcpy(p + FROZEN_HEADER + slots_len, entries, (size_t)n * sizeof(MapEntry));
    if (blob.len) memcpy(p + FROZEN_HEADER + slots_len + (size_t)n * sizeof(MapEntry), blob.data, (size_t)blob.len);
    uint64_t mask = (1ULL << bits) - 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *k = (const unsigned char *)blob.data + entries[i].offset;
        size_t len = entries[i].length;
        uint64_t hash;
        if (kind & 2) {
            uint32_t left;
            memcpy(&left, k, 4);
            hash = key_hash(k + 4, left, k + 4 + left, len - 4 - left, 1);
        } else {
            hash = key_hash(k, len, NULL, 0, 0);
        }
        uint64_t j = hash & mask;
        while (slots[j]) j = (j + 1) & mask;
        slots[j] = (uint32_t)(i + 1);
    }
done:
    PyMem_Free(entries);
    PyMem_Free(blob.data);
    return out;
}

/* -- lists -- */

static int frozen_list_init(FrozenList *self, PyObject *args, PyObject *kwargs) {
    if (take_view(args, kwargs, &self->view, &self->has_view, LIST_MAGIC, "FrozenList") < 0) return -1;
    const ListHeader *h = self->view.buf;
    uint64_t len = (uint64_t)self->view.len, count = h->count;
    uint64_t offsets_len = ((count + 1) * 4 + 7) & ~7ULL, bitmap_len = ((count + 7) / 8 + 7) & ~7ULL;
    if (h->item_kind > 1 || count >= UINT32_MAX || h->present > count || h->blob_len > len ||
        FROZEN_HEADER + offsets_len + bitmap_len + h->blob_len != len) {
        PyBuffer_Release(&self->view);
        return raise_error(PyExc_ValueError, "FrozenList: the section's header does not fit its size");
    }
    self->has_view = 1;
    self->head = h;
    self->offsets = (const uint32_t *)((const char *)h + FROZEN_HEADER);
    self->bitmap = (const unsigned char *)self->offsets + offsets_len;
    self->blob = self->bitmap + bitmap_len;
    return 0;
}

static int frozen_list_ready(const FrozenList *l) {
    if (l->has_view) return 1;
    raise_error(PyExc_ValueError, "FrozenList was not initialised");
    return 0;
}

static int list_present(const FrozenList *l, uint64_t i) { return (l->bitmap[i >> 3] >> (i & 7)) & 1; }

/* Item i (0 <= i < count) as a Python object (None for an absent one). */
static PyObject *list_item(const FrozenList *l, uint64_t i) {
    if (!list_present(l, i)) Py_RETURN_NONE;
    uint32_t a = l->offsets[i], b = l->offsets[i + 1];
    if (a > b || b > l->head->blob_len) return raise_error(PyExc_ValueError, "damaged table"), NULL;
    return decode_part(l->blob + a, b - a, (int)l->head->item_kind);
}

static Py_ssize_t frozen_list_len(FrozenList *l) { return frozen_list_ready(l) ? (Py_ssize_t)l->head->count : -1; }

static PyObject *frozen_list_item(FrozenList *l, Py_ssize_t i) {
    if (!frozen_list_ready(l)) return NULL;
    if (i < 0 || (uint64_t)i >= l->head->count) return raise_error(PyExc_IndexError, "FrozenList index out of range"), NULL;
    return list_item(l, (uint64_t)i);
}

static PyObject *frozen_list_subscript(FrozenList *l, PyObject *key) {
    if (!frozen_list_ready(l)) return NULL;
    if (PySlice_Check(key)) {
        Py_ssize_t start, stop, step, n;
        if (PySlice_Unpack(key, &start, &stop, &step) < 0) return NULL;
        n = PySlice_AdjustIndices((Py_ssize_t)l->head->count, &start, &stop, step);
        PyObject *out = PyList_New(n);
        for (Py_ssize_t k = 0; out && k < n; k++) {
            PyObject *item = list_item(l, (uint64_t)(start + k * step));
            if (!item) Py_CLEAR(out);
            else PyList_SET_ITEM(out, k, item);
        }
        return out;
    }
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0) i += (Py_ssize_t)l->head->count;
    return frozen_list_item(l, i);
}

/* FrozenIdMap: ids as keys; the absent items are not there. */
static int idmap_index(const FrozenList *l, PyObject *key, uint64_t *i) {
    if (!PyLong_Check(key) || PyBool_Check(key)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(key, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v < 0 || (uint64_t)v >= l->head->count || !list_present(l, (uint64_t)v)) return 0;
    *i = (uint64_t)v;
    return 1;
}

static Py_ssize_t frozen_idmap_len(FrozenList *l) { return frozen_list_ready(l) ? (Py_ssize_t)l->head->present : -1; }

FROZEN_LOOKUPS(frozen_idmap, FrozenList, uint64_t, frozen_list_ready, idmap_index, list_item)

/* The section of `items` (item i at index i; NULL or None for an absent one), of bytes or str. */
static PyObject *build_list(PyObject **items, Py_ssize_t n) {
    int kind = -1;
    uint64_t present = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i];
        if (!item || item == Py_None) continue;
        int k = PyBytes_CheckExact(item) ? KEY_BYTES : PyUnicode_CheckExact(item) ? KEY_STR : -1;
        if (k < 0 || (kind >= 0 && k != kind))
            return raise_error(PyExc_TypeError, "FrozenList items are all bytes or all str (or None)"), NULL;
        kind = k;
        present++;
    }
    if (kind < 0) kind = KEY_BYTES;
    if ((uint64_t)n >= UINT32_MAX) return raise_error(PyExc_TypeError, "too many items for a FrozenList"), NULL;
    uint64_t offsets_len = (((uint64_t)n + 1) * 4 + 7) & ~7ULL, bitmap_len = (((uint64_t)n + 7) / 8 + 7) & ~7ULL;
    uint32_t *offsets = PyMem_Calloc((size_t)n + 1, 4);
    unsigned char *bitmap = PyMem_Calloc((size_t)bitmap_len + 1, 1);
    Bytes blob = {0};
    PyObject *out = NULL;
    if (!offsets || !bitmap) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i], *owner = NULL;
        offsets[i] = (uint32_t)blob.len;
        if (!item || item == Py_None) continue;
        const char *data;
        Py_ssize_t len;
        int ok = key_part(item, kind, &data, &len, &owner) > 0 && bytes_add(&blob, data, (size_t)len) == 0;
        Py_XDECREF(owner);
        if (!ok) goto done;
        if ((uint64_t)blob.len >= UINT32_MAX) {
            PyErr_SetString(PyExc_TypeError, "the items are too long for a FrozenList");
            goto done;
        }
        bitmap[i >> 3] |= (unsigned char)(1 << (i & 7));
    }
    offsets[n] = (uint32_t)blob.len;
    size_t size = FROZEN_HEADER + (size_t)offsets_len + (size_t)bitmap_len + (size_t)blob.len;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    memset(p, 0, FROZEN_HEADER + (size_t)offsets_len + (size_t)bitmap_len);
    ListHeader *h = (ListHeader *)p;
    memcpy(h->magic, LIST_MAGIC, 8);
    h->item_kind = (uint32_t)kind;
    h->count = (uint64_t)n;
    h->present = present;
    h->blob_len = (uint64_t)blob.len;
    memcpy(p + FROZEN_HEADER, offsets, ((size_t)n + 1) * 4);
    memcpy(p + FROZEN_HEADER + offsets_len, bitmap, (size_t)((n + 7) / 8));
    if (blob.len) memcpy(p + FROZEN_HEADER + offsets_len + bitmap_len, blob.data, (size_t)blob.len);
done:
    PyMem_Free(offsets);
    PyMem_Free(bitmap);
    PyMem_Free(blob.data);
    return out;
}

static PyObject *frozen_list_build(PyObject *cls, PyObject *list) {
    if (!PyList_Check(list)) return raise_error(PyExc_TypeError, "FrozenList.build() takes a list"), NULL;
    return build_list(((PyListObject *)list)->ob_item, PyList_GET_SIZE(list));
}

static PyObject *frozen_idmap_build(PyObject *cls, PyObject *dict) {
    if (!PyDict_Check(dict)) return raise_error(PyExc_TypeError, "FrozenIdMap.build() takes a dict"), NULL;
    Py_ssize_t n = PyDict_GET_SIZE(dict), pos = 0;
    long long top = -1;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyLong_CheckExact(key)) return raise_error(PyExc_TypeError, "FrozenIdMap keys are ints"), NULL;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(key, &overflow);
        if (overflow || v < 0 || v >= INT32_MAX) return raise_error(PyExc_TypeError, "FrozenIdMap keys are ids"), NULL;
        if (v > top) top = v;
    }
    /* Only dense ids: one slot per id up to the largest. */
    if (top + 1 > 2 * (long long)n + 1024) return raise_error(PyExc_TypeError, "the ids are too sparse for a FrozenIdMap"), NULL;
    PyObject **items = PyMem_Calloc((size_t)(top + 2), sizeof(PyObject *));
    if (!items) return PyErr_NoMemory();
    pos = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (value == Py_None) {
            PyMem_Free(items);
            return raise_error(PyExc_TypeError, "FrozenIdMap values are bytes or str, not None"), NULL;
        }
        items[PyLong_AsLongLong(key)] = value;
    }
    PyObject *out = build_list(items, (Py_ssize_t)(top + 1));
    PyMem_Free(items);
    return out;
}

/* -- iterating -- */

enum { ITER_KEYS, ITER_VALUES, ITER_ITEMS, ITER_LIST };

typedef struct {
    PyObject_HEAD
    PyObject *owner; /* a FrozenMap, FrozenList or FrozenIdMap */
    uint64_t pos;
    int mode;
} FrozenIter;

static PyObject *frozen_iter_new(PyObject *owner, int mode) {
    FrozenIter *it = PyObject_New(FrozenIter, &FrozenIterType);
    if (!it) return NULL;
    Py_INCREF(owner);
    it->owner = owner;
    it->pos = 0;
    it->mode = mode;
    return (PyObject *)it;
}

static void frozen_iter_dealloc(FrozenIter *it) {
    Py_XDECREF(it->owner);
    PyObject_Free(it);
}

static PyObject *frozen_iter_next(FrozenIter *it) {
    if (Py_IS_TYPE(it->owner, &FrozenMapType)) {
        FrozenMap *m = (FrozenMap *)it->owner;
        if (!frozen_map_ready(m) || it->pos >= m->head->count) return NULL;
        const MapEntry *e = &m->entries[it->pos++];
        if (it->mode == ITER_VALUES) return map_value(m, e);
        PyObject *key = map_key(m, e);
        if (!key || it->mode == ITER_KEYS) return key;
        PyObject *value = map_value(m, e), *pair = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_DECREF(key);
        Py_XDECREF(value);
        return pair;
    }
    FrozenList *l = (FrozenList *)it->owner;
    if (!frozen_list_ready(l)) return NULL;
    if (it->mode == ITER_LIST) return it->pos < l->head->count ? list_item(l, it->pos++) : NULL;
    while (it->pos < l->head->count && !list_present(l, it->pos)) it->pos++; /* an id map: the present ids */
    if (it->pos >= l->head->count) return NULL;
    uint64_t i = it->pos++;
    if (it->mode == ITER_KEYS) return PyLong_FromUnsignedLongLong(i);
    PyObject *value = list_item(l, i);
    if (!value || it->mode == ITER_VALUES) return value;
    PyObject *key = PyLong_FromUnsignedLongLong(i), *pair = key ? PyTuple_Pack(2, key, value) : NULL;
    Py_XDECREF(key);
    Py_DECREF(value);
    return pair;
}

static PyObject *frozen_keys(PyObject *self, PyObject *unused) { return frozen_iter_new(self, ITER_KEYS); }
static PyObject *frozen_values(PyObject *self, PyObject *unused) { return frozen_iter_new(self, ITER_VALUES); }
static PyObject *frozen_items(PyObject *self, PyObject *unused) { return frozen_iter_new(self, ITER_ITEMS); }
static PyObject *frozen_map_iter(PyObject *self) { return frozen_iter_new(self, ITER_KEYS); }
static PyObject *frozen_list_iter(PyObject *self) { return frozen_iter_new(self, ITER_LIST); }

/* Pickled again (a table read back, then stored elsewhere): as the plain container it stands for. */
static PyObject *frozen_reduce_as(PyObject *self, PyTypeObject *type, int mode) {
    PyObject *iter = frozen_iter_new(self, mode), *items = iter ? PySequence_List(iter) : NULL;
    Py_XDECREF(iter);
    if (!items) return NULL;
    return Py_BuildValue("(O(N))", (PyObject *)type, items);
}

/* A FrozenMap or FrozenIdMap pickles as a dict. */
static PyObject *frozen_map_reduce(PyObject *self, PyObject *unused) {
    return frozen_reduce_as(self, &PyDict_Type, ITER_ITEMS);
}
static PyObject *frozen_list_reduce(PyObject *self, PyObject *unused) {
    return frozen_reduce_as(self, &PyList_Type, ITER_LIST);
}

static PyObject *frozen_nbytes(PyObject *self, void *closure) {
    FrozenMap *m = (FrozenMap *)self;
    return PyLong_FromSsize_t(m->has_view ? m->view.len : 0);
}

static PyGetSetDef frozen_getset[] = {
    {"nbytes", frozen_nbytes, NULL, "the bytes of the section", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* A read-only mapping over a section, FrozenMap or FrozenIdMap (`prefix` frozen_map or frozen_idmap, whose
 * functions it takes): its methods (get, keys, values and items, build, pickled as a dict), `len`, `[]` and `in`.
 * `key` and `value` name its keys and values in the docs, `order` says what order its keys come in. */
#define FROZEN_MAPPING(Name, prefix, object, init, flags, doc, key, value, order)                            \
    static PyMethodDef prefix##_methods[] = {                                                                   \
        {"get", (PyCFunction)(void (*)(void))prefix##_get, METH_FASTCALL, "get(" key ", default=None)"},      \
        {"keys", frozen_keys, METH_NOARGS, "an iterator over the " key "s" order},                            \
        {"values", frozen_values, METH_NOARGS, "an iterator over the " value "s"},                            \
        {"items", frozen_items, METH_NOARGS, "an iterator over (" key ", " value ") pairs"},                  \
        {"build", prefix##_build, METH_O | METH_CLASS, "build(dict) -> the bytes of a " #Name " section"},    \
        {"__reduce__", frozen_map_reduce, METH_NOARGS, NULL},                                               \
        {NULL, NULL, 0, NULL},                                                                              \
    };                                                                                                      \
    static PyMappingMethods prefix##_mapping = {(lenfunc)prefix##_len, (binaryfunc)prefix##_subscript, NULL}; \
    static PySequenceMethods prefix##_sequence = {.sq_contains = (objobjproc)prefix##_contains};            \
    static PyTypeObject Name##Type = {                                                                      \
        TWIN_TYPE("app.engines.compiled._frozen." #Name, object, flags, doc, init, frozen_dealloc),                   \
        .tp_as_mapping = &prefix##_mapping,                                                                 \
        .tp_as_sequence = &prefix##_sequence,                                                               \
        .tp_iter = frozen_map_iter,                                                                         \
        .tp_methods = prefix##_methods,                                                                     \
        .tp_getset = frozen_getset,                                                                         \
    };

FROZEN_MAPPING(FrozenMap, frozen_map, FrozenMap, frozen_map_init, Py_TPFLAGS_DEFAULT,
               "FrozenMap(buffer): a read-only mapping stored in a buffer (see FrozenMap.build).", "key", "value",
               ", in the dict's order")

FROZEN_MAPPING(FrozenIdMap, frozen_idmap, FrozenList, frozen_list_init, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_MAPPING,
               "FrozenIdMap(buffer): a read-only mapping of ids to bytes or str stored in a buffer.", "id", "item", "")

static PyMethodDef frozen_list_methods[] = {
    {"build", frozen_list_build, METH_O | METH_CLASS, "build(list) -> the bytes of a FrozenList section"},
    {"__reduce__", frozen_list_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods frozen_list_sequence = {.sq_length = (lenfunc)frozen_list_len,
                                                 .sq_item = (ssizeargfunc)frozen_list_item};
static PyMappingMethods frozen_list_mapping = {(lenfunc)frozen_list_len, (binaryfunc)frozen_list_subscript, NULL};

static PyTypeObject FrozenListType = {
    TWIN_TYPE("app.engines.compiled._frozen.FrozenList", FrozenList, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_SEQUENCE,
              "FrozenList(buffer): a read-only list of bytes or str stored in a buffer (see FrozenList.build).",
              frozen_list_init, frozen_dealloc),
    .tp_as_sequence = &frozen_list_sequence,
    .tp_as_mapping = &frozen_list_mapping,
    .tp_iter = frozen_list_iter,
    .tp_methods = frozen_list_methods,
    .tp_getset = frozen_getset,
};

static PyTypeObject FrozenIterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "app.engines.compiled._frozen.FrozenIterator",
    .tp_basicsize = sizeof(FrozenIter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)frozen_iter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)frozen_iter_next,
};

static PyMethodDef methods[] = {
    {NULL, NULL, 0, NULL},
};

/* The types but the iterator are added to the module by name. */
TWIN_MODULE_WITH_TYPES(_frozen, "The frozen containers of table files, read in place.", methods, 3, &FrozenMapType,
                       &FrozenListType, &FrozenIdMapType, &FrozenIterType)
