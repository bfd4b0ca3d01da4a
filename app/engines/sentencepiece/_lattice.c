/* The compiled twins of the unigram engine's hot loops (app/engines/sentencepiece/unigram.py and normalizer.py).
 *
 *   trie(pieces, usable) -> bytes
 *     the pieces a path may use (usable[id] == 1) as a character trie: a hash table of edges (parent node,
 *     character) -> child node, and each node's piece id (-1: a prefix only). Built once per model.
 *   viterbi(text, trie, path_score, unk_id, unk_score) -> list of (start, end, id)
 *     text        the normalized text (str)
 *     trie        what trie() built for the model
 *     path_score  bytes: the float32 score of each id (array('f').tobytes())
 *     unk_id, unk_score  the <unk> id and its float32 score
 *
 * viterbi is step for step the Python loop (which is the sentencepiece library's): from each position every usable
 * piece starting there proposes a path, shortest first (the trie walk yields the same pieces as the Python loop's
 * dictionary and prefix bitmap), float32 sums, strictly better paths replace, <unk> for a character no
 * one-character piece covers, scores re-based past +-100,000. It only finds the best path; the ids, byte fallback
 * and placement stay in Python.
 *
 *   normalize(text, user, units, strings, flags) -> (normalized, norm_to_orig)
 *     the twin of Normalizer.normalize in app/engines/sentencepiece/normalizer.py for a spec with a charsmap or
 *     user-defined symbols: user (tuple of str, longest first), units (the Darts trie as native uint32s), strings
 *     (the NUL-terminated outputs), flags (add_dummy_prefix 1, remove_extra_whitespaces 2, escape_whitespaces 4,
 *     treat_whitespace_as_suffix 8). Same units, same whitespace rules, same offsets as the Python loop.
 *
 * The tests hold every twin equal to its Python loop (tests/engines/test_unigram_model.py).
 */
#include "twins.h"
#include <stdint.h>
#include <string.h>

#define RESET_THRESHOLD 100000.0f

/* The trie blob: a header, then `capacity` edges, then `nodes` piece ids. An edge's parent is stored plus one, so
 * that 0 marks an empty slot. */
typedef struct {
    uint64_t capacity, nodes;
} TrieHeader;

typedef struct {
    uint32_t parent, ch;
    int32_t child;
} Edge;

static inline size_t edge_slot(uint32_t parent, uint32_t ch, uint64_t capacity) {
    uint64_t key = ((uint64_t)parent << 21 | ch) * 0x9E3779B97F4A7C15ULL;
    return (size_t)(((key >> 32) * capacity) >> 32); /* the high bits, scaled to any capacity below 2**32 */
}

/* The child of `node` by `ch`, or -1. */
static inline int32_t trie_step(const Edge *edges, uint64_t capacity, int32_t node, Py_UCS4 ch) {
    uint32_t parent = (uint32_t)node + 1;
    for (size_t slot = edge_slot(parent, ch, capacity);; slot = slot + 1 == capacity ? 0 : slot + 1) {
        const Edge *e = &edges[slot];
        if (e->parent == 0) return -1;
        if (e->parent == parent && e->ch == ch) return e->child;
    }
}

static void put_edge(Edge *edges, uint64_t capacity, Edge edge) {
    size_t slot = edge_slot(edge.parent, edge.ch, capacity);
    while (edges[slot].parent) slot = slot + 1 == capacity ? 0 : slot + 1;
    edges[slot] = edge;
}

static PyObject *trie(PyObject *self, PyObject *args) {
    PyObject *pieces;
    Py_buffer usable;
    if (!PyArg_ParseTuple(args, "O!y*", &PyList_Type, &pieces, &usable)) return NULL;
    PyObject *blob = NULL;
    const unsigned char *use = usable.buf;
    Py_ssize_t n_pieces = PyList_GET_SIZE(pieces);
    if (usable.len != n_pieces || n_pieces >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "usable must have one byte per piece, for fewer than 2**31 pieces");
        goto done;
    }
    uint64_t chars = 0;
    for (Py_ssize_t id = 0; id < n_pieces; id++) {
        PyObject *piece = PyList_GET_ITEM(pieces, id);
        if (!PyUnicode_Check(piece)) {
            PyErr_SetString(PyExc_TypeError, "pieces must be strings");
            goto done;
        }
        if (use[id]) chars += PyUnicode_GET_LENGTH(piece);
    }
    /* Built in a table with room for one edge per character, then moved to one sized for the edges there are
     * (pieces share their prefixes: a third of the room, for a 256k-piece model). */
    uint64_t room = chars + chars / 2 + 16;
    if (room >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the pieces are too long for the trie");
        goto done;
    }
    Edge *edges = PyMem_Calloc(room, sizeof(Edge));
    int32_t *ids = PyMem_Malloc((chars + 1) * sizeof(int32_t));
    if (!edges || !ids) {
        PyMem_Free(edges);
        PyMem_Free(ids);
        PyErr_NoMemory();
        goto done;
    }
    uint64_t nodes = 1;
    ids[0] = -1;
    for (Py_ssize_t id = 0; id < n_pieces; id++) {
        if (!use[id]) continue;
        PyObject *piece = PyList_GET_ITEM(pieces, id);
        int kind = PyUnicode_KIND(piece);
        const void *data = PyUnicode_DATA(piece);
        int32_t node = 0;
        for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(piece); k++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, k);
            int32_t child = trie_step(edges, room, node, ch);
            if (child < 0) {
                put_edge(edges, room, (Edge){(uint32_t)node + 1, ch, (int32_t)nodes});
                ids[nodes] = -1;
                child = (int32_t)nodes++;
            }
            node = child;
        }
        ids[node] = (int32_t)id;
    }
    uint64_t capacity = nodes + nodes / 4 + 16; /* load at most 4/5 */
    size_t size = sizeof(TrieHeader) + capacity * sizeof(Edge) + nodes * sizeof(int32_t);
    blob = PyBytes_FromStringAndSize(NULL, size);
    if (blob) {
        char *buf = PyBytes_AS_STRING(blob);
        memset(buf, 0, size);
        *(TrieHeader *)buf = (TrieHeader){capacity, nodes};
        Edge *final = (Edge *)(buf + sizeof(TrieHeader));
        for (uint64_t slot = 0; slot < room; slot++)
            if (edges[slot].parent) put_edge(final, capacity, edges[slot]);
        memcpy(final + capacity, ids, nodes * sizeof(int32_t));
    }
    PyMem_Free(edges);
    PyMem_Free(ids);
done:
    PyBuffer_Release(&usable);
    return blob;
}

static PyObject *viterbi(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_buffer tree, scores;
    long unk_id;
    float unk_score;
    if (!PyArg_ParseTuple(args, "Uy*y*lf", &text, &tree, &scores, &unk_id, &unk_score)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *chars = PyUnicode_DATA(text);
    const TrieHeader *header = tree.buf;
    const Edge *edges = (const Edge *)(header + 1);
    const int32_t *node_ids = (const int32_t *)(edges + header->capacity);
    const float *score = scores.buf;
    Py_ssize_t n_ids = scores.len / (Py_ssize_t)sizeof(float);
    float *best = PyMem_Calloc(n + 1, sizeof(float));
    Py_ssize_t *from = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    long *ids = PyMem_Calloc(n + 1, sizeof(long));
    if (!best || !from || !ids) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i <= n; i++) from[i] = -1;
    Py_ssize_t frontier = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        float here = best[i];
        if (here < -RESET_THRESHOLD || here > RESET_THRESHOLD) {
            for (Py_ssize_t k = i; k <= frontier; k++)
                if (k == i || from[k] >= 0) best[k] -= here;
            here = 0.0f;
        }
        int single = 0;
        int32_t node = 0;
        for (Py_ssize_t j = i + 1; j <= n; j++) {
            node = trie_step(edges, header->capacity, node, PyUnicode_READ(kind, chars, j - 1));
            if (node < 0) break;
            int32_t pid = node_ids[node];
            if (pid < 0) continue;
            if (pid >= n_ids) {
                PyErr_SetString(PyExc_ValueError, "a piece id has no score");
                goto done;
            }
            float candidate = score[pid] + here;
            if (from[j] < 0 || candidate > best[j]) {
                best[j] = candidate;
                from[j] = i;
                ids[j] = pid;
            }
            if (j == i + 1) single = 1;
            if (j > frontier) frontier = j;
        }
        if (!single) {
            float candidate = unk_score + here;
            if (from[i + 1] < 0 || candidate > best[i + 1]) {
                best[i + 1] = candidate;
                from[i + 1] = i;
                ids[i + 1] = unk_id;
            }
            if (i + 1 > frontier) frontier = i + 1;
        }
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t end = n; end > 0; end = from[end]) count++;
    out = PyList_New(count);
    if (!out) goto done;
    for (Py_ssize_t end = n, k = count - 1; end > 0; end = from[end], k--) {
        PyObject *seg = Py_BuildValue("(nnl)", from[end], end, ids[end]);
        if (!seg) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, seg);
    }
done:
    PyMem_Free(best);
    PyMem_Free(from);
    PyMem_Free(ids);
    PyBuffer_Release(&tree);
    PyBuffer_Release(&scores);
    return out;
}

#define SPACE_SYMBOL 0x2581

typedef struct {
    Py_UCS4 *chars;
    Py_ssize_t *from;
    Py_ssize_t len, cap;
} Normalized;

static int grow(Normalized *out, Py_ssize_t extra) {
    if (out->len + extra <= out->cap) return 0;
    Py_ssize_t cap = (out->len + extra) * 2;
    if (resize_array(&out->chars, cap, sizeof(Py_UCS4)) < 0) return -1;
    if (resize_array(&out->from, cap, sizeof(Py_ssize_t)) < 0) return -1;
    out->cap = cap;
    return 0;
}

static int utf8_of(Py_UCS4 c, unsigned char *buf) {
    if (c < 0x80) return buf[0] = (unsigned char)c, 1;
    if (c < 0x800) return buf[0] = 0xC0 | (c >> 6), buf[1] = 0x80 | (c & 0x3F), 2;
    if (c < 0x10000)
        return buf[0] = 0xE0 | (c >> 12), buf[1] = 0x80 | ((c >> 6) & 0x3F), buf[2] = 0x80 | (c & 0x3F), 3;
    buf[0] = 0xF0 | (c >> 18), buf[1] = 0x80 | ((c >> 12) & 0x3F), buf[2] = 0x80 | ((c >> 6) & 0x3F);
    buf[3] = 0x80 | (c & 0x3F);
    return 4;
}

/* CharsMap.may_start: does some rule begin with these bytes (one character)? */
static int may_start(const uint32_t *units, Py_ssize_t n_units, const unsigned char *c, int len) {
    uint32_t unit = units[0];
    size_t node = (size_t)(unit >> 10) << ((unit & 0x200) >> 6);
    for (int k = 0; k < len; k++) {
        node ^= c[k];
        if (node >= (size_t)n_units || (units[node] & 0x800000FF) != c[k]) return 0;
        unit = units[node];
        node ^= (size_t)(unit >> 10) << ((unit & 0x200) >> 6);
    }
    return 1;
}

/* CharsMap.longest: the byte length of the longest rule matching data at pos (0 if none) and its output offset. */
static Py_ssize_t longest_rule(const uint32_t *units, Py_ssize_t n_units, const unsigned char *data, Py_ssize_t n,
                               Py_ssize_t pos, uint32_t *value) {
    uint32_t unit = units[0];
    size_t node = (size_t)(unit >> 10) << ((unit & 0x200) >> 6);
    Py_ssize_t best = 0;
    for (Py_ssize_t i = pos; i < n; i++) {
        unsigned char c = data[i];
        node ^= c;
        if (node >= (size_t)n_units) break;
        unit = units[node];
        if ((unit & 0x800000FF) != c) break;
        node ^= (size_t)(unit >> 10) << ((unit & 0x200) >> 6);
        if ((unit >> 8) & 1) {
            best = i + 1 - pos;
            *value = units[node] & 0x7FFFFFFF;
        }
    }
    return best;
}

/* Append one normalization unit (its replacement, from input characters start..end): Normalizer.normalize's loop. */
static int push_unit(Normalized *out, PyObject *rep, Py_ssize_t start, int flags, int *prev_space) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(rep), k = 0;
    int kind = PyUnicode_KIND(rep);
    const void *data = PyUnicode_DATA(rep);
    if (*prev_space)
        while (k < n && PyUnicode_READ(kind, data, k) == ' ') k++;
    if (k < n) {
        if (grow(out, n - k) < 0) return -1;
        for (Py_ssize_t m = k; m < n; m++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, m);
            out->chars[out->len] = c == ' ' && (flags & 4) ? SPACE_SYMBOL : c;
            out->from[out->len++] = start;
        }
        *prev_space = PyUnicode_READ(kind, data, n - 1) == ' ';
    }
    if (!(flags & 2)) *prev_space = 0;
    return 0;
}

static PyObject *normalize(PyObject *self, PyObject *args) {
    PyObject *text, *user;
    Py_buffer rules, strings;
    int flags;
    if (!PyArg_ParseTuple(args, "UO!y*y*i", &text, &PyTuple_Type, &user, &rules, &strings, &flags)) return NULL;
    PyObject *result = NULL;
    Normalized out = {NULL, NULL, 0, 0};
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), n_data, n_user = PyTuple_GET_SIZE(user);
    int kind = PyUnicode_KIND(text);
    const void *chars = PyUnicode_DATA(text);
    const uint32_t *units = rules.buf;
    Py_ssize_t n_units = rules.len / 4;
    const char *strs = strings.buf;
    unsigned char first[8192] = {0}; /* a bit per first character (mod 65536) of a user-defined symbol */
    for (Py_ssize_t u = 0; u < n_user; u++) {
        PyObject *sym = PyTuple_GET_ITEM(user, u);
        if (!PyUnicode_Check(sym) || PyUnicode_GET_LENGTH(sym) == 0) {
            PyErr_SetString(PyExc_TypeError, "user-defined symbols must be non-empty strings");
            goto done;
        }
        Py_UCS4 c = PyUnicode_READ_CHAR(sym, 0) & 0xFFFF;
        first[c >> 3] |= 1 << (c & 7);
    }
    const unsigned char *data = (const unsigned char *)PyUnicode_AsUTF8AndSize(text, &n_data);
    if (!data) goto done;
    Py_UCS4 space = flags & 4 ? SPACE_SYMBOL : ' ';
    int started = 0, prev_space = (flags & 2) != 0;
    Py_ssize_t consumed = 0, i = 0, bpos = 0;
    while (i < n) {
        Py_UCS4 ch = PyUnicode_READ(kind, chars, i);
        PyObject *rep = NULL;
        Py_ssize_t end = i + 1;
        unsigned char buf[4];
        int blen = utf8_of(ch, buf);
        if (first[(ch & 0xFFFF) >> 3] >> (ch & 7) & 1) {
            for (Py_ssize_t u = 0; u < n_user && !rep; u++) {
                PyObject *sym = PyTuple_GET_ITEM(user, u);
                Py_ssize_t len = PyUnicode_GET_LENGTH(sym);
                if (i + len <= n && PyUnicode_Tailmatch(text, sym, i, i + len, -1) == 1) {
                    rep = Py_NewRef(sym);
                    end = i + len;
                    PyObject *b = PyUnicode_AsUTF8String(sym);
                    if (!b) goto unit_failed;
                    bpos += PyBytes_GET_SIZE(b);
                    Py_DECREF(b);
                }
            }
        }
        if (!rep && n_units && may_start(units, n_units, buf, blen)) {
            uint32_t value = 0;
            Py_ssize_t matched = longest_rule(units, n_units, data, n_data, bpos, &value);
            if (matched) {
                Py_ssize_t whole = 0; /* complete characters in the match, as bytes.decode("utf-8", "ignore") */
                for (Py_ssize_t k = bpos; k < bpos + matched;) {
                    unsigned char b = data[k];
                    int size = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
                    if (b >= 0x80 && b < 0xC0) { k++; continue; }
                    if (k + size <= bpos + matched) whole++;
                    k += size;
                }
                end = i + (whole ? whole : 1);
                bpos += matched;
                if (value >= (uint32_t)strings.len) {
                    PyErr_SetString(PyExc_ValueError, "precompiled_charsmap is broken; re-export the model");
                    goto done;
                }
                const char *s = strs + value;
                const char *nul = memchr(s, 0, strings.len - value);
                if (!nul) {
                    PyErr_SetString(PyExc_ValueError, "precompiled_charsmap is broken; re-export the model");
                    goto done;
                }
                rep = PyUnicode_DecodeUTF8(s, nul - s, "replace");
                if (!rep) goto done;
            }
        }
        if (!rep) {
            rep = PyUnicode_FromOrdinal(ch);
            if (!rep) goto done;
            bpos += blen;
        }
        if (!started && (flags & 2) && PyUnicode_GET_LENGTH(rep) == 1 && PyUnicode_READ_CHAR(rep, 0) == ' ') {
            Py_DECREF(rep); /* a leading space: removed */
            i = end;
            continue;
        }
        if (!started) {
            started = 1;
            consumed = i;
            if ((flags & 1) && !(flags & 8)) {
                if (grow(&out, 1) < 0) goto unit_failed;
                out.chars[out.len] = space;
                out.from[out.len++] = consumed;
            }
        }
        if (push_unit(&out, rep, i, flags, &prev_space) < 0) goto unit_failed;
        Py_DECREF(rep);
        consumed = end;
        i = end;
        continue;
    unit_failed:
        Py_XDECREF(rep);
        goto done;
    }
    if (!started) {
        result = Py_BuildValue("(s[n])", "", n);
        goto done;
    }
    if (flags & 2)
        while (out.len > 0 && out.chars[out.len - 1] == space) consumed = out.from[--out.len];
    if ((flags & 1) && (flags & 8)) {
        if (grow(&out, 1) < 0) goto done;
        out.chars[out.len] = space;
        out.from[out.len++] = consumed;
    }
    PyObject *normalized = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.chars, out.len);
    PyObject *offsets = normalized ? PyList_New(out.len + 1) : NULL;
    if (!offsets) {
        Py_XDECREF(normalized);
        goto done;
    }
    for (Py_ssize_t k = 0; k <= out.len; k++) {
        PyObject *o = PyLong_FromSsize_t(k < out.len ? out.from[k] : consumed);
        if (!o) {
            Py_DECREF(normalized);
            Py_DECREF(offsets);
            goto done;
        }
        PyList_SET_ITEM(offsets, k, o);
    }
    result = Py_BuildValue("(NN)", normalized, offsets);
done:
    PyMem_Free(out.chars);
    PyMem_Free(out.from);
    PyBuffer_Release(&rules);
    PyBuffer_Release(&strings);
    return result;
}

static PyMethodDef methods[] = {
    {"trie", trie, METH_VARARGS, "The usable pieces of a unigram model as the character trie viterbi() walks."},
    {"viterbi", viterbi, METH_VARARGS, "The best unigram segmentation of a normalized text: [(start, end, id)]."},
    {"normalize", normalize, METH_VARARGS, "SentencePiece normalization with a charsmap: (normalized, offsets)."},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE(_lattice, NULL, methods)
