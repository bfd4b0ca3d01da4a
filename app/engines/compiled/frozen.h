/* The frozen containers: maps and lists read where they lie (a memory-mapped table file).
 *
 * A tokenizer's big read-only containers (ranks, vocabulary, merges, pieces) are stored once, in a table file that
 * every worker process maps (app/engines/registry/table_files.py): each is one section of the file, read in place,
 * so nothing is parsed at load and the operating system shares the pages between processes.
 *
 *   FrozenMap.build(dict) -> bytes, FrozenMap(buffer): a mapping of bytes, str, (bytes, bytes) or (str, str) keys to
 *     int or float values, in the dict's order. Layout: a 64-byte MapHeader | slots: uint32[2**slot_bits] (an
 *     entry's index + 1, 0 for none; at most half full) | MapEntry[count] | the keys' bytes. A str key is its UTF-8
 *     (lone surrogates passed through), a pair key is the left part's length (uint32), the left part, the right
 *     part. Lookups hash the key's bytes (FNV-1a, then mixed) and probe linearly.
 *   FrozenList.build(list) -> bytes, FrozenList(buffer): a list of bytes or str items (None allowed). Layout: a
 *     64-byte ListHeader | uint32 offsets[count + 1] | a bitmap of the items that are not None | the items' bytes.
 *   FrozenIdMap.build(dict) -> bytes, FrozenIdMap(buffer): the same layout read as a mapping of int ids to items
 *     (from a dict whose keys are small ints: a decoder, id -> bytes); the None items are absent.
 *
 * build raises TypeError for a container it cannot hold (the table store then pickles it as it is). Reading never
 * trusts the buffer beyond its header: every offset is checked against the buffer before it is followed, and a probe
 * stops after visiting every slot, so a damaged section answers "not found", never reads outside the buffer. (The
 * store checks each file's key and checksum before it maps it; these checks are for the buffer alone.) The merge
 * loop (app/engines/_merge.c) reads a FrozenMap's entries directly, through this header: merge(text, table, ids)
 * with a FrozenMap for table or ids looks the text's slices up without building an object for them.
 */

#ifndef TOKENPLAY_FROZEN_H
#define TOKENPLAY_FROZEN_H

#include "twins.h"
#include <stdint.h>
#include <string.h>

#define FROZEN_HEADER 64
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

enum { KEY_BYTES = 0, KEY_STR = 1, KEY_BYTES_PAIR = 2, KEY_STR_PAIR = 3 }; /* bit 0: str; bit 1: a pair */
enum { VALUE_INT = 0, VALUE_FLOAT = 1 };

typedef struct {
    char magic[8];
    uint32_t key_kind, value_kind;
    uint64_t count, slot_bits, blob_len, reserved[3];
} MapHeader;

typedef struct {
    uint32_t offset, length;
    union {
        int64_t i;
        double f;
    } value;
} MapEntry;

typedef struct {
    char magic[8];
    uint32_t item_kind, reserved0;
    uint64_t count, present, blob_len, reserved[3];
} ListHeader;

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
    const MapHeader *head;
    const uint32_t *slots;
    const MapEntry *entries;
    const unsigned char *blob;
    uint64_t mask;
} FrozenMap;

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int has_view;
    const ListHeader *head;
    const uint32_t *offsets;
    const unsigned char *bitmap;
    const unsigned char *blob;
} FrozenList; /* FrozenIdMap has the same struct */


static inline uint64_t fnv_feed(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static inline uint64_t fnv_done(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* The hash of a key's bytes: `a` alone, or the pair (a, b) as its bytes are stored (length of a, a, b). */
static inline uint64_t key_hash(const unsigned char *a, size_t na, const unsigned char *b, size_t nb, int pair) {
    uint64_t h = FNV_OFFSET;
    if (pair) {
        uint32_t len = (uint32_t)na;
        h = fnv_feed(h, (const unsigned char *)&len, 4);
    }
    h = fnv_feed(h, a, na);
    if (pair) h = fnv_feed(h, b, nb);
    return fnv_done(h);
}

/* The entry whose key is `a` (or the pair (a, b)), or NULL. */
static inline const MapEntry *map_find(const FrozenMap *m, const unsigned char *a, size_t na, const unsigned char *b,
                                size_t nb) {
    int pair = (m->head->key_kind & 2) != 0;
    size_t total = pair ? 4 + na + nb : na;
    uint64_t count = m->head->count, blob_len = m->head->blob_len;
    uint64_t i = key_hash(a, na, b, nb, pair) & m->mask;
    for (uint64_t probes = 0; probes <= m->mask; probes++, i = (i + 1) & m->mask) {
        uint32_t s = m->slots[i];
        if (s == 0 || s > count) return NULL;
        const MapEntry *e = &m->entries[s - 1];
        if (e->length != total || (uint64_t)e->offset + e->length > blob_len) continue;
        const unsigned char *k = m->blob + e->offset;
        if (pair) {
            uint32_t left;
            memcpy(&left, k, 4);
            if (left != na || memcmp(k + 4, a, na) || memcmp(k + 4 + na, b, nb)) continue;
        } else if (memcmp(k, a, na)) {
            continue;
        }
        return e;
    }
    return NULL;
}

static inline PyObject *map_value(const FrozenMap *m, const MapEntry *e) {
    if (m->head->value_kind == VALUE_FLOAT) return PyFloat_FromDouble(e->value.f);
    return PyLong_FromLongLong(e->value.i);
}


/* Whether a FrozenMap holds a section (else ValueError is set). */
static inline int frozen_map_ready(const FrozenMap *m) {
    if (m->has_view) return 1;
    raise_error(PyExc_ValueError, "FrozenMap was not initialised");
    return 0;
}

/* Whether the keys of a FrozenMap are of the kind a text's slices are (str keys for a str text...) and, when
 * `pairs`, (left, right) pairs, else single parts. */
static inline int frozen_fits(const FrozenMap *map, int text_is_str, int pairs) {
    int kind = (int)map->head->key_kind;
    return (kind & 1) == text_is_str && ((kind & 2) != 0) == pairs;
}

#endif
