/* The compiled twin of the unigram trainer's hot loops (app/engines/sentencepiece/unigram_trainer.py).
 *
 * A set of lattices lives in four flat int32 arrays (array('i').tobytes() of each), built by build():
 *   word_pos[w] .. word_pos[w + 1]   the positions (characters) of word w
 *   node_at[g] .. node_at[g + 1]     the nodes starting at position g (global)
 *   node_end[k], node_piece[k]       where node k ends (within its word) and its piece index
 * Nodes of a start come by increasing end, as the Python lattices list them.
 *
 *   count_substrings(words, freqs, max_len) -> (substrings, counts)   every substring of 2 to max_len characters
 *     of the words, first met first, and its frequency (int64 bytes)
 *   build(words, index, prefixes, max_len) -> (word_pos, node_at, node_end, node_piece)   as bytes;
 *     prefixes: a set holding every proper prefix of every piece of index (a longer match is looked up no more)
 *   estep(lattice, logp, freqs, expected) -> log-likelihood    adds expected uses into `expected` (float64, writable)
 *   viterbi_counts(lattice, logp, freqs, uses, words_using) -> corpus tokens    adds into both (float64, writable)
 *   losses(piece_lattice, logp, uses, words_using, candidates, total_uses, total_words, out)   one loss per candidate
 *
 * logp, uses and words_using are float64 buffers (array('d')), freqs int64 (array('q')), candidates int32.
 * Operation for operation the Python loops (same order of float additions, the same exp/log1p/log), so both give
 * bit-identical numbers; a piece whose logp is -inf is skipped, which is exactly what the Python arithmetic does
 * with it. tests/engines/test_unigram_trainer.py holds the two equal.
 */
#include "twins.h"
#include <math.h>
#include <stdint.h>

typedef struct {
    Py_buffer bufs[4];
    const int32_t *word_pos, *node_at, *node_end, *node_piece;
    Py_ssize_t n_words;
} Lattice;

static void lattice_release(Lattice *lat) {
    for (int k = 0; k < 4; k++)
        if (lat->bufs[k].obj) PyBuffer_Release(&lat->bufs[k]);
}

static int lattice_get(PyObject *tuple, Lattice *lat) {
    memset(lat, 0, sizeof(*lat));
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4)
        return raise_error(PyExc_TypeError, "a lattice is a tuple of four int32 buffers, as build() returns");
    for (int k = 0; k < 4; k++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(tuple, k), &lat->bufs[k], PyBUF_SIMPLE) < 0) {
            lattice_release(lat);
            return -1;
        }
    lat->word_pos = lat->bufs[0].buf;
    lat->node_at = lat->bufs[1].buf;
    lat->node_end = lat->bufs[2].buf;
    lat->node_piece = lat->bufs[3].buf;
    lat->n_words = lat->bufs[0].len / 4 - 1;
    return 0;
}

/* A growable int32 array. */
typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Ints;

static int ints_push(Ints *v, int32_t x) {
    if (GROW(v->data, v->cap, v->len + 1, 1024) < 0) return -1;
    v->data[v->len++] = x;
    return 0;
}

static PyObject *ints_bytes(Ints *v) {
    return PyBytes_FromStringAndSize((const char *)v->data, v->len * sizeof(int32_t));
}

/* 0 when every item of the list `words` is a str, else -1 with a TypeError. */
static int all_str(PyObject *words) {
    for (Py_ssize_t w = 0; w < PyList_GET_SIZE(words); w++)
        if (!PyUnicode_Check(PyList_GET_ITEM(words, w))) {
            return raise_error(PyExc_TypeError, "words must be str");
        }
    return 0;
}

static PyObject *count_substrings(PyObject *self, PyObject *args) {
    PyObject *words;
    Py_buffer freq_buf;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "O!y*n", &PyList_Type, &words, &freq_buf, &max_len)) return NULL;
    const int64_t *freqs = freq_buf.buf;
    PyObject *where = PyDict_New(), *found = PyList_New(0), *out = NULL;  /* substring -> its place in found */
    int64_t *counts = NULL;
    Py_ssize_t cap = 0;
    if (!where || !found || all_str(words) < 0) goto done;
    if ((Py_ssize_t)(freq_buf.len / sizeof(int64_t)) != PyList_GET_SIZE(words)) {
        PyErr_SetString(PyExc_ValueError, "one frequency per word");
        goto done;
    }
    for (Py_ssize_t w = 0; w < PyList_GET_SIZE(words); w++) {
        PyObject *word = PyList_GET_ITEM(words, w);
        Py_ssize_t n = PyUnicode_GET_LENGTH(word);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t stop = i + max_len < n ? i + max_len : n;
            for (Py_ssize_t j = i + 2; j <= stop; j++) {
                PyObject *sub = PyUnicode_Substring(word, i, j);
                if (!sub) goto done;
                PyObject *place = PyDict_GetItemWithError(where, sub);
                if (place) {
                    counts[PyLong_AsSsize_t(place)] += freqs[w];
                    Py_DECREF(sub);
                    continue;
                }
                Py_ssize_t k = PyList_GET_SIZE(found);
                if (GROW(counts, cap, k + 1, 4096) < 0) {
                    Py_DECREF(sub);
                    goto done;
                }
                PyObject *key = PyErr_Occurred() ? NULL : PyLong_FromSsize_t(k);
                int failed = !key || PyDict_SetItem(where, sub, key) < 0 || PyList_Append(found, sub) < 0;
                Py_XDECREF(key);
                Py_DECREF(sub);
                if (failed) goto done;
                counts[k] = freqs[w];
            }
        }
    }
    out = Py_BuildValue("(ON)", found,
                        PyBytes_FromStringAndSize((const char *)counts, PyList_GET_SIZE(found) * sizeof(int64_t)));
done:
    Py_XDECREF(where);
    Py_XDECREF(found);
    PyMem_Free(counts);
    PyBuffer_Release(&freq_buf);
    return out;
}

static PyObject *build(PyObject *self, PyObject *args) {
    PyObject *words, *index, *prefixes;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "O!O!O!n", &PyList_Type, &words, &PyDict_Type, &index, &PySet_Type, &prefixes,
                          &max_len))
        return NULL;
    Ints word_pos = {0}, node_at = {0}, node_end = {0}, node_piece = {0};
    PyObject *out = NULL;
    int32_t pos = 0;
    if (all_str(words) < 0 || ints_push(&word_pos, 0) < 0) goto done;
    for (Py_ssize_t w = 0; w < PyList_GET_SIZE(words); w++) {
        PyObject *word = PyList_GET_ITEM(words, w);
        Py_ssize_t n = PyUnicode_GET_LENGTH(word);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (ints_push(&node_at, (int32_t)node_end.len) < 0) goto done;
            Py_ssize_t stop = i + max_len < n ? i + max_len : n;
            for (Py_ssize_t j = i + 1; j <= stop; j++) {
                PyObject *sub = PyUnicode_Substring(word, i, j);
                if (!sub) goto done;
                PyObject *found = PyDict_GetItemWithError(index, sub);
                if (!found) {
                    int more = PyErr_Occurred() ? -1 : PySet_Contains(prefixes, sub);
                    Py_DECREF(sub);
                    if (more < 0) goto done;
                    if (more) continue;
                    break;
                }
                Py_DECREF(sub);
                long piece = PyLong_AsLong(found);
                if (piece == -1 && PyErr_Occurred()) goto done;
                if (ints_push(&node_end, (int32_t)j) < 0 || ints_push(&node_piece, (int32_t)piece) < 0) goto done;
            }
        }
        pos += (int32_t)n;
        if (ints_push(&word_pos, pos) < 0) goto done;
    }
    if (ints_push(&node_at, (int32_t)node_end.len) < 0) goto done;
    out = Py_BuildValue("(NNNN)", ints_bytes(&word_pos), ints_bytes(&node_at), ints_bytes(&node_end),
                        ints_bytes(&node_piece));
done:
    PyMem_Free(word_pos.data);
    PyMem_Free(node_at.data);
    PyMem_Free(node_end.data);
    PyMem_Free(node_piece.data);
    return out;
}

/* Room for one word's pass, n + 1 of each, grown as longer words come: alpha and beta (best: alpha), and for
 * Viterbi the back pointers, their pieces and the path. */
typedef struct {
    double *alpha, *beta;
    int32_t *from, *piece, *path;
    Py_ssize_t cap;
} Room;

static void room_free(Room *r) {
    PyMem_Free(r->alpha);
    PyMem_Free(r->beta);
    PyMem_Free(r->from);
    PyMem_Free(r->piece);
    PyMem_Free(r->path);
}

static int room_fit(Room *r, Py_ssize_t n) {
    if (n + 1 <= r->cap) return 0;
    room_free(r);
    r->cap = 2 * (n + 1);
    r->alpha = PyMem_Malloc(r->cap * sizeof(double));
    r->beta = PyMem_Malloc(r->cap * sizeof(double));
    r->from = PyMem_Malloc(r->cap * sizeof(int32_t));
    r->piece = PyMem_Malloc(r->cap * sizeof(int32_t));
    r->path = PyMem_Malloc(r->cap * sizeof(int32_t));
    if (!r->alpha || !r->beta || !r->from || !r->piece || !r->path) {
        r->cap = 0;
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void release(Py_buffer *bufs, int n) {
    for (int k = 0; k < n; k++) PyBuffer_Release(&bufs[k]);
}

/* log(e^x + e^y) in the two orders the Python loop takes. */
static inline double log_add(double acc, double c) {
    if (acc == -INFINITY) return c;
    if (c > acc) return c + log1p(exp(acc - c));
    if (c != -INFINITY) return acc + log1p(exp(c - acc));
    return acc;
}

static PyObject *estep(PyObject *self, PyObject *args) {
    PyObject *lat_obj;
    Py_buffer b[3];  /* logp, freqs, expected */
    if (!PyArg_ParseTuple(args, "Oy*y*w*", &lat_obj, &b[0], &b[1], &b[2])) return NULL;
    Lattice lat;
    Room s = {0};
    PyObject *out = NULL;
    if (lattice_get(lat_obj, &lat) < 0) goto release;
    const double *logp = b[0].buf;
    const int64_t *freqs = b[1].buf;
    double *expected = b[2].buf;
    double likelihood = 0.0;
    for (Py_ssize_t w = 0; w < lat.n_words; w++) {
        const int32_t base = lat.word_pos[w];
        const Py_ssize_t n = lat.word_pos[w + 1] - base;
        const int32_t *at = lat.node_at + base;
        if (room_fit(&s, n) < 0) goto done;
        double *alpha = s.alpha, *beta = s.beta;
        for (Py_ssize_t i = 0; i <= n; i++) alpha[i] = beta[i] = -INFINITY;
        alpha[0] = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            double a = alpha[i];
            if (a == -INFINITY) continue;
            for (int32_t k = at[i]; k < at[i + 1]; k++) {
                double lp = logp[lat.node_piece[k]];
                if (lp == -INFINITY) continue;
                int32_t j = lat.node_end[k];
                alpha[j] = log_add(alpha[j], a + lp);
            }
        }
        beta[n] = 0.0;
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            double acc = -INFINITY;
            for (int32_t k = at[i]; k < at[i + 1]; k++) {
                double lp = logp[lat.node_piece[k]];
                if (lp == -INFINITY) continue;
                acc = log_add(acc, lp + beta[lat.node_end[k]]);
            }
            beta[i] = acc;
        }
        double z = alpha[n], freq = (double)freqs[w];
        for (Py_ssize_t i = 0; i < n; i++) {
            double a = alpha[i] - z;
            if (a == -INFINITY) continue;
            for (int32_t k = at[i]; k < at[i + 1]; k++) {
                int32_t p = lat.node_piece[k];
                double lp = logp[p], b = beta[lat.node_end[k]];
                if (lp != -INFINITY && b != -INFINITY) expected[p] += freq * exp(a + lp + b);
            }
        }
        likelihood += freq * z;
    }
    out = PyFloat_FromDouble(likelihood);
done:
    room_free(&s);
    lattice_release(&lat);
release:
    release(b, 3);
    return out;
}

/* The best path of word w of `lat` never using piece `skip`, as piece indices into `path` (its length returned);
 * 0 when there is none. `best` holds n + 1 doubles, `from` and `piece` n + 1 ints. */
static Py_ssize_t viterbi(const Lattice *lat, Py_ssize_t w, const double *logp, int32_t skip, double *best,
                          int32_t *from, int32_t *piece, int32_t *path) {
    const int32_t base = lat->word_pos[w];
    const Py_ssize_t n = lat->word_pos[w + 1] - base;
    const int32_t *at = lat->node_at + base;
    for (Py_ssize_t i = 0; i <= n; i++) best[i] = -INFINITY;
    best[0] = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (best[i] == -INFINITY) continue;
        for (int32_t k = at[i]; k < at[i + 1]; k++) {
            int32_t p = lat->node_piece[k], j = lat->node_end[k];
            double score = best[i] + logp[p];
            if (p != skip && score > best[j]) {
                best[j] = score;
                from[j] = (int32_t)i;
                piece[j] = p;
            }
        }
    }
    if (best[n] == -INFINITY) return 0;
    Py_ssize_t count = 0;
    for (Py_ssize_t end = n; end > 0; end = from[end]) count++;
    Py_ssize_t k = count;
    for (Py_ssize_t end = n; end > 0; end = from[end]) path[--k] = piece[end];
    return count;
}

static PyObject *viterbi_counts(PyObject *self, PyObject *args) {
    PyObject *lat_obj;
    Py_buffer b[4];  /* logp, freqs, uses, words_using */
    if (!PyArg_ParseTuple(args, "Oy*y*w*w*", &lat_obj, &b[0], &b[1], &b[2], &b[3])) return NULL;
    Lattice lat;
    Room v = {0};
    PyObject *out = NULL;
    Py_ssize_t n_pieces = b[0].len / sizeof(double);
    int32_t *seen = NULL;
    if (lattice_get(lat_obj, &lat) < 0) goto release;
    seen = PyMem_Malloc(n_pieces * sizeof(int32_t) + 1);
    if (!seen) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t p = 0; p < n_pieces; p++) seen[p] = -1;
    const double *logp = b[0].buf;
    const int64_t *freqs = b[1].buf;
    double *uses = b[2].buf, *words_using = b[3].buf;
    long long tokens = 0;
    for (Py_ssize_t w = 0; w < lat.n_words; w++) {
        if (room_fit(&v, lat.word_pos[w + 1] - lat.word_pos[w]) < 0) goto done;
        Py_ssize_t count = viterbi(&lat, w, logp, -1, v.alpha, v.from, v.piece, v.path);
        double freq = (double)freqs[w];
        tokens += freqs[w] * (long long)count;
        for (Py_ssize_t k = 0; k < count; k++) {
            int32_t p = v.path[k];
            uses[p] += freq;
            if (seen[p] != (int32_t)w) {
                seen[p] = (int32_t)w;
                words_using[p] += freq;
            }
        }
    }
    out = PyLong_FromLongLong(tokens);
done:
    PyMem_Free(seen);
    room_free(&v);
    lattice_release(&lat);
release:
    release(b, 4);
    return out;
}

static PyObject *losses(PyObject *self, PyObject *args) {
    PyObject *lat_obj;
    Py_buffer b[5];  /* logp, uses, words_using, candidates, out */
    double total_uses, total_words;
    if (!PyArg_ParseTuple(args, "Oy*y*y*y*ddw*", &lat_obj, &b[0], &b[1], &b[2], &b[3], &total_uses, &total_words,
                          &b[4]))
        return NULL;
    Lattice lat;
    Room v = {0};
    PyObject *out = NULL;
    if (lattice_get(lat_obj, &lat) < 0) goto release;
    const double *logp = b[0].buf, *uses = b[1].buf, *words_using = b[2].buf;
    const int32_t *candidates = b[3].buf;
    double *loss = b[4].buf;
    const double log_total = log(total_uses);
    for (Py_ssize_t c = 0; c < (Py_ssize_t)(b[3].len / sizeof(int32_t)); c++) {
        int32_t i = candidates[c];
        if (uses[i] == 0) {
            loss[c] = 0.0;
            continue;
        }
        if (room_fit(&v, lat.word_pos[i + 1] - lat.word_pos[i]) < 0) goto done;
        Py_ssize_t count = viterbi(&lat, i, logp, i, v.alpha, v.from, v.piece, v.path);
        double log_alt_total = log(total_uses + uses[i] * (double)(count - 1));
        double logprob_piece = log(uses[i]) - log_total;
        double logprob_alt = 0.0;
        for (Py_ssize_t k = 0; k < count; k++) logprob_alt += log(uses[v.path[k]] + uses[i]) - log_alt_total;
        loss[c] = words_using[i] / total_words * (logprob_piece - logprob_alt);
    }
    out = Py_NewRef(Py_None);
done:
    room_free(&v);
    lattice_release(&lat);
release:
    release(b, 5);
    return out;
}

static PyMethodDef methods[] = {
    {"count_substrings", count_substrings, METH_VARARGS, "Every substring of 2 to max_len characters, and its count."},
    {"build", build, METH_VARARGS, "Every word's lattice over the pieces of `index`, as four int32 buffers."},
    {"estep", estep, METH_VARARGS, "Forward-backward over every word: adds expected uses, returns the log-likelihood."},
    {"viterbi_counts", viterbi_counts, METH_VARARGS, "Viterbi over every word: adds uses and words using each piece."},
    {"losses", losses, METH_VARARGS, "The pruning loss of each candidate piece, over the pieces' own lattices."},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE(_unigram_train, NULL, methods)
