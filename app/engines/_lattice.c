/* The compiled twin of the unigram Viterbi pass in app/engines/sentencepiece/unigram.py (UnigramTokenizer._segments).
 *
 *   viterbi(text, piece_ids, usable, path_score, prefixes, longest, unk_id, unk_score) -> list of (start, end, id)
 *     text        the normalized text (str)
 *     piece_ids   dict: piece -> id, the pieces a path may use among them
 *     usable      bytes: 1 where the id may be used by a path
 *     path_score  bytes: the float32 score of each id (array('f').tobytes())
 *     prefixes    bytes: the bitmap of the hashes of the strings that begin a usable piece
 *     longest     the longest usable piece, in characters
 *     unk_id, unk_score  the <unk> id and its float32 score
 *
 * Step for step the Python loop (which is the sentencepiece library's): float32 sums, strictly better paths
 * replace, <unk> for a character no one-character piece covers, scores re-based past +-100,000. The tests hold the
 * two equal (tests/test_unigram_model.py). It only finds the best path; the ids, byte fallback and placement stay
 * in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define RESET_THRESHOLD 100000.0f

static PyObject *viterbi(PyObject *self, PyObject *args) {
    PyObject *text, *piece_ids;
    Py_buffer usable, scores, prefixes;
    Py_ssize_t longest;
    long unk_id;
    float unk_score;
    if (!PyArg_ParseTuple(args, "UO!y*y*y*nlf", &text, &PyDict_Type, &piece_ids, &usable, &scores, &prefixes,
                          &longest, &unk_id, &unk_score))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const unsigned char *use = usable.buf, *bits = prefixes.buf;
    const float *score = scores.buf;
    Py_ssize_t n_ids = usable.len, mask = prefixes.len * 8 - 1;
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
        Py_ssize_t stop = i + longest < n ? i + longest : n;
        for (Py_ssize_t j = i + 1; j <= stop; j++) {
            PyObject *sub = PyUnicode_Substring(text, i, j);
            if (!sub) goto done;
            PyObject *pid_obj = PyDict_GetItemWithError(piece_ids, sub);
            if (!pid_obj) {
                if (PyErr_Occurred()) {
                    Py_DECREF(sub);
                    goto done;
                }
                Py_hash_t h = PyObject_Hash(sub);
                Py_DECREF(sub);
                if (h == -1) goto done;
                Py_ssize_t bit = (Py_ssize_t)((size_t)h & (size_t)mask);
                if (bits[bit >> 3] >> (bit & 7) & 1) continue;
                break;
            }
            Py_DECREF(sub);
            long pid = PyLong_AsLong(pid_obj);
            if (pid == -1 && PyErr_Occurred()) goto done;
            if (pid < 0 || pid >= n_ids || !use[pid]) continue;
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
    PyBuffer_Release(&usable);
    PyBuffer_Release(&scores);
    PyBuffer_Release(&prefixes);
    return out;
}

static PyMethodDef methods[] = {
    {"viterbi", viterbi, METH_VARARGS, "The best unigram segmentation of a normalized text: [(start, end, id)]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lattice", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lattice(void) { return PyModule_Create(&module); }
