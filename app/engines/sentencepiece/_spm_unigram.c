/* The compiled twin of sentencepiece's unigram trainer (app/engines/sentencepiece/unigram_trainer.py): its seed
 * pieces from a suffix array, and its EM, pruning and finishing passes, in sentencepiece's float arithmetic (float32
 * where it keeps float32, the same order of additions, the same libm calls), so the pieces and scores are its own.
 *
 *   seed_candidates(corpus, scripts, flags, max_len, keep) -> (pieces' UTF-8 one after the other, their byte
 *       lengths as int32 bytes, their scores as float32 bytes)
 *       corpus: every sentence's UTF-8 followed by a NUL byte. The substrings that its suffix array's LCP intervals
 *       make (the repeated ones that some two occurrences continue differently), trimmed of a final NUL, whole
 *       characters, 2 to max_len characters, valid pieces (flags and scripts as in _spm_train.c); counts added up
 *       by piece; score = count * characters in float32; best first (score, then bytes longer, then smaller), the
 *       first `keep`.
 *   Core(words, word_lens, word_freqs, pieces, piece_lens) -> the EM core over the words (code points, array('i'))
 *       and the seed pieces (code points): it holds every word's lattice over the seed. A model is given to each
 *       call as `order` (array('i'): the seed index of each piece, in the model's order) and `scores`
 *       (array('f'), by position in `order`).
 *     .estep(order, scores) -> (expected array('f') by position, log-likelihood)
 *     .mstep(expected) -> (kept positions array('i'), their new scores array('f'))
 *     .prune(order, scores, desired, shrinking) -> (new order as positions array('i'), loss by position array('f')
 *       (NaN: removed as unused or split; inf: kept without a loss), corpus tokens)
 *     .unreachable(order, scores) -> kept positions array('i')
 *     .tokens(order, scores) -> the corpus's length in pieces under the model (Viterbi)
 */
#include "twins.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* -- scripts and pieces (the rule: piece_rules.h) ----------------------------------------------------------------- */

typedef struct {
    const int32_t *t;
    Py_ssize_t n;
    int32_t hira, kata, han, inherited;
    int flags, max_len;
} Rules;

static int32_t script_of(const Rules *R, int32_t cp) {
    Py_ssize_t lo = 0, hi = R->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (R->t[3 * mid] <= cp) lo = mid + 1;
        else hi = mid;
    }
    int32_t s = 0;
    if (lo > 0 && cp <= R->t[3 * (lo - 1) + 1]) s = R->t[3 * (lo - 1) + 2];
    if (s == R->hira || s == R->kata || cp == 0x30FC) s = R->han;
    else if (s == R->inherited) s = INT32_MAX;
    return s;
}

static int is_decimal(int32_t c) { return (c >= 0x30 && c <= 0x39) || (c >= 0xFF10 && c <= 0xFF19); }

#define PIECE_CHARS Rules
#define PIECE_BANNED(R, c) \
    ((c) == 0x2585 || (c) == 0 || (c) == 0x1F || (c) == 0x20 || ((c) >= 0xD800 && (c) < 0xE000) || (c) > 0x10FFFF)
#define PIECE_SPACE(R, c) ((c) == 0x2581)
#define PIECE_DECIMAL(R, c) is_decimal(c)
#define PIECE_SCRIPT(R, c) script_of(R, c)
#include "piece_rules.h"

static int valid_cps(const Rules *R, const int32_t *p, int32_t n) { return piece_allowed(R, p, n, R->flags, R->max_len); }

static int rules_init(Rules *R, Py_buffer *scripts, int flags, int max_len) {
    const int32_t *t = scripts->buf;
    if (scripts->len < 16) return raise_error(PyExc_ValueError, "script table too short");
    R->hira = t[0];
    R->kata = t[1];
    R->han = t[2];
    R->inherited = t[3];
    R->t = t + 4;
    R->n = (scripts->len / 4 - 4) / 3;
    R->flags = flags;
    R->max_len = max_len;
    return 0;
}

/* -- suffix array (SA-IS) and LCP --------------------------------------------------------------------------------- */

static void buckets(const int32_t *s, int32_t n, int32_t K, int32_t *bkt, int end) {
    memset(bkt, 0, (size_t)(K + 1) * sizeof *bkt);
    for (int32_t i = 0; i < n; i++) bkt[s[i]]++;
    int32_t sum = 0;
    for (int32_t i = 0; i <= K; i++) {
        sum += bkt[i];
        bkt[i] = end ? sum : sum - bkt[i];
    }
}

#define IS_LMS(i) ((i) > 0 && t[i] && !t[(i) - 1])

static void induce(const int32_t *s, const uint8_t *t, int32_t *SA, int32_t n, int32_t K, int32_t *bkt) {
    buckets(s, n, K, bkt, 0);
    for (int32_t i = 0; i < n; i++) {
        int32_t j = SA[i] - 1;
        if (SA[i] > 0 && !t[j]) SA[bkt[s[j]]++] = j;
    }
    buckets(s, n, K, bkt, 1);
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t j = SA[i] - 1;
        if (SA[i] > 0 && t[j]) SA[--bkt[s[j]]] = j;
    }
}

/* SA of s[0..n), whose last symbol is a unique smallest 0; symbols in [0, K]. 0, or -1 with MemoryError. */
static int sais(const int32_t *s, int32_t *SA, int32_t n, int32_t K) {
    uint8_t *t = PyMem_Malloc((size_t)n);
    int32_t *bkt = PyMem_Malloc((size_t)(K + 1) * sizeof *bkt);
    if (!t || !bkt) {
        PyMem_Free(t);
        PyMem_Free(bkt);
        return no_memory();
    }
    t[n - 1] = 1;
    if (n >= 2) t[n - 2] = 0;
    for (int32_t i = n - 3; i >= 0; i--) t[i] = s[i] < s[i + 1] || (s[i] == s[i + 1] && t[i + 1]);
    buckets(s, n, K, bkt, 1);
    for (int32_t i = 0; i < n; i++) SA[i] = -1;
    for (int32_t i = 1; i < n; i++)
        if (IS_LMS(i)) SA[--bkt[s[i]]] = i;
    induce(s, t, SA, n, K, bkt);
    int32_t n1 = 0;
    for (int32_t i = 0; i < n; i++)
        if (IS_LMS(SA[i])) SA[n1++] = SA[i];
    for (int32_t i = n1; i < n; i++) SA[i] = -1;
    int32_t name = 0, prev = -1;
    for (int32_t i = 0; i < n1; i++) {
        int32_t pos = SA[i];
        int diff = 0;
        for (int32_t d = 0; d < n; d++) {
            if (prev == -1 || s[pos + d] != s[prev + d] || t[pos + d] != t[prev + d]) {
                diff = 1;
                break;
            } else if (d > 0 && (IS_LMS(pos + d) || IS_LMS(prev + d))) {
                break;
            }
        }
        if (diff) {
            name++;
            prev = pos;
        }
        SA[n1 + pos / 2] = name - 1;
    }
    for (int32_t i = n - 1, j = n - 1; i >= n1; i--)
        if (SA[i] >= 0) SA[j--] = SA[i];
    int32_t *s1 = SA + n - n1, *SA1 = SA;
    if (name < n1) {
        if (sais(s1, SA1, n1, name - 1) < 0) {
            PyMem_Free(t);
            PyMem_Free(bkt);
            return -1;
        }
    } else {
        for (int32_t i = 0; i < n1; i++) SA1[s1[i]] = i;
    }
    buckets(s, n, K, bkt, 1);
    for (int32_t i = 1, j = 0; i < n; i++)
        if (IS_LMS(i)) s1[j++] = i;
    for (int32_t i = 0; i < n1; i++) SA1[i] = s1[SA1[i]];
    for (int32_t i = n1; i < n; i++) SA[i] = -1;
    for (int32_t i = n1 - 1; i >= 0; i--) {
        int32_t j = SA[i];
        SA[i] = -1;
        SA[--bkt[s[j]]] = j;
    }
    induce(s, t, SA, n, K, bkt);
    PyMem_Free(t);
    PyMem_Free(bkt);
    return 0;
}
#undef IS_LMS

/* -- seed candidates -------------------------------------------------------------------------------------------- */

typedef struct {
    int32_t off, len;
    uint64_t freq;
    float score;
} Cand;

typedef struct {
    uint64_t *hash;
    int32_t *idx; /* -1 empty */
    Py_ssize_t cap;
} CandMap;

static const uint8_t *sort_text; /* for the qsort comparator (the GIL is held throughout) */

static int cand_order(const void *x, const void *y) {
    const Cand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    int32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(sort_text + a->off, sort_text + b->off, (size_t)n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static uint64_t bytes_hash(const uint8_t *p, int32_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static PyObject *seed_candidates(PyObject *self, PyObject *args) {
    Py_buffer corpus, scripts;
    int flags, max_len;
    Py_ssize_t keep;
    if (!PyArg_ParseTuple(args, "y*y*iin", &corpus, &scripts, &flags, &max_len, &keep)) return NULL;
    PyObject *result = NULL;
    Rules R;
    int32_t *s = NULL, *SA = NULL, *rank = NULL, *lcp = NULL, *stack_l = NULL, *stack_d = NULL, cps[1024];
    Cand *cands = NULL;
    Py_ssize_t ncands = 0, capcands = 0;
    CandMap M = {NULL, NULL, 0};
    const uint8_t *u = corpus.buf;
    int32_t n = (int32_t)corpus.len;
    if (rules_init(&R, &scripts, flags, max_len) < 0) goto done;
    if (n == 0) {
        result = Py_BuildValue("(y#y#y#)", "", (Py_ssize_t)0, "", (Py_ssize_t)0, "", (Py_ssize_t)0);
        goto done;
    }
    s = PyMem_Malloc((size_t)(n + 1) * sizeof *s);
    SA = PyMem_Malloc((size_t)(n + 1) * sizeof *SA);
    rank = PyMem_Malloc((size_t)n * sizeof *rank);
    lcp = PyMem_Malloc((size_t)(n + 1) * sizeof *lcp);
    stack_l = PyMem_Malloc((size_t)(n + 2) * sizeof *stack_l);
    stack_d = PyMem_Malloc((size_t)(n + 2) * sizeof *stack_d);
    M.cap = 1 << 16;
    M.hash = PyMem_Malloc((size_t)M.cap * sizeof *M.hash);
    M.idx = PyMem_Malloc((size_t)M.cap * sizeof *M.idx);
    if (!s || !SA || !rank || !lcp || !stack_l || !stack_d || !M.hash || !M.idx) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < M.cap; i++) M.idx[i] = -1;
    for (int32_t i = 0; i < n; i++) s[i] = u[i] + 1;
    s[n] = 0;
    if (sais(s, SA, n + 1, 256) < 0) goto done;
    int32_t *sa = SA + 1; /* without the sentinel's suffix */
    for (int32_t i = 0; i < n; i++) rank[sa[i]] = i;
    lcp[0] = 0;
    for (int32_t i = 0, h = 0; i < n; i++) {
        if (rank[i] > 0) {
            int32_t j = sa[rank[i] - 1];
            while (i + h < n && j + h < n && u[i + h] == u[j + h]) h++;
            lcp[rank[i]] = h;
            if (h > 0) h--;
        } else {
            h = 0;
        }
    }
    /* the LCP intervals, innermost first */
    Py_ssize_t top = 0;
    stack_l[0] = 0;
    stack_d[0] = 0;
    for (int32_t i = 1; i <= n; i++) {
        int32_t v = i < n ? lcp[i] : 0, last_l = i - 1;
        while (v < stack_d[top]) {
            int32_t l = stack_l[top], depth = stack_d[top], r = i - 1;
            top--;
            last_l = l;
            uint64_t freq = (uint64_t)(r - l + 1);
            int32_t off = sa[l];
            if (depth > 1 && freq >= 2 && off >= 0 && off + depth <= n && (u[off] & 0xC0) != 0x80 &&
                (off + depth == n || (u[off + depth] & 0xC0) != 0x80)) {
                int32_t len = depth;
                while (len > 0 && u[off + len - 1] == 0) len--;
                if (!memchr(u + off, 0, (size_t)len)) {
                    int32_t nc = 0, ok = 1;
                    for (int32_t k = 0; k < len && ok;) { /* decode: the bytes came from a Python str */
                        uint8_t b = u[off + k];
                        int32_t cp, m;
                        if (b < 0x80) cp = b, m = 1;
                        else if (b < 0xE0) cp = b & 0x1F, m = 2;
                        else if (b < 0xF0) cp = b & 0x0F, m = 3;
                        else cp = b & 0x07, m = 4;
                        for (int32_t q = 1; q < m; q++) cp = (cp << 6) | (u[off + k + q] & 0x3F);
                        k += m;
                        if (nc >= 1024 || nc >= max_len) ok = 0;
                        else cps[nc++] = cp;
                    }
                    if (ok && nc > 1 && nc <= max_len && valid_cps(&R, cps, nc)) {
                        uint64_t h = bytes_hash(u + off, len);
                        Py_ssize_t mask = M.cap - 1, slot = (Py_ssize_t)(h & (uint64_t)mask);
                        while (M.idx[slot] >= 0) {
                            Cand *c = &cands[M.idx[slot]];
                            if (M.hash[slot] == h && c->len == len && !memcmp(u + c->off, u + off, (size_t)len)) break;
                            slot = (slot + 1) & mask;
                        }
                        if (M.idx[slot] >= 0) {
                            cands[M.idx[slot]].freq += freq;
                        } else {
                            if (GROW(cands, capcands, ncands + 1, 4096) < 0) goto done;
                            cands[ncands] = (Cand){off, len, freq, (float)nc};
                            M.hash[slot] = h;
                            M.idx[slot] = (int32_t)ncands++;
                            if (ncands * 2 > M.cap) { /* grow the map */
                                Py_ssize_t cap = M.cap * 2;
                                uint64_t *hash = PyMem_Malloc((size_t)cap * sizeof *hash);
                                int32_t *idx = PyMem_Malloc((size_t)cap * sizeof *idx);
                                if (!hash || !idx) {
                                    PyMem_Free(hash);
                                    PyMem_Free(idx);
                                    PyErr_NoMemory();
                                    goto done;
                                }
                                for (Py_ssize_t q = 0; q < cap; q++) idx[q] = -1;
                                for (Py_ssize_t q = 0; q < M.cap; q++) {
                                    if (M.idx[q] < 0) continue;
                                    Py_ssize_t sl = (Py_ssize_t)(M.hash[q] & (uint64_t)(cap - 1));
                                    while (idx[sl] >= 0) sl = (sl + 1) & (cap - 1);
                                    idx[sl] = M.idx[q];
                                    hash[sl] = M.hash[q];
                                }
                                PyMem_Free(M.hash);
                                PyMem_Free(M.idx);
                                M.hash = hash;
                                M.idx = idx;
                                M.cap = cap;
                            }
                        }
                    }
                }
            }
            if (v > stack_d[top]) {
                top++;
                stack_l[top] = l;
                stack_d[top] = v;
            }
        }
        if (v > stack_d[top]) {
            top++;
            stack_l[top] = last_l;
            stack_d[top] = v;
        }
    }
    for (Py_ssize_t i = 0; i < ncands; i++) cands[i].score = (float)cands[i].freq * cands[i].score;
    sort_text = u;
    if (ncands) qsort(cands, (size_t)ncands, sizeof *cands, cand_order);
    if (keep > ncands) keep = ncands;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < keep; i++) total += cands[i].len;
    PyObject *text = PyBytes_FromStringAndSize(NULL, total), *lens = PyBytes_FromStringAndSize(NULL, keep * 4),
             *scores = PyBytes_FromStringAndSize(NULL, keep * 4);
    if (text && lens && scores) {
        char *t = PyBytes_AS_STRING(text);
        int32_t *l = (int32_t *)PyBytes_AS_STRING(lens);
        float *f = (float *)PyBytes_AS_STRING(scores);
        for (Py_ssize_t i = 0; i < keep; i++) {
            l[i] = cands[i].len;
            f[i] = cands[i].score;
            memcpy(t, u + cands[i].off, (size_t)cands[i].len);
            t += cands[i].len;
        }
        result = PyTuple_Pack(3, text, lens, scores);
    }
    Py_XDECREF(text);
    Py_XDECREF(lens);
    Py_XDECREF(scores);
done:;
    void *owned[] = {s, SA, rank, lcp, stack_l, stack_d, cands, M.hash, M.idx};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) PyMem_Free(owned[i]);
    PyBuffer_Release(&corpus);
    PyBuffer_Release(&scripts);
    return result;
}

/* -- the EM core -------------------------------------------------------------------------------------------------- */

typedef struct {
    int32_t start, len, piece; /* piece: seed index, or -1 for the unknown node */
    float score;
} Node;

typedef struct {
    PyObject_HEAD
    int32_t *wcps, *wstart, *wlen;
    int64_t *wfreq;
    Py_ssize_t nwords;
    int32_t *pcps, *pstart, *plen;
    Py_ssize_t npieces;
    /* trie over the seed pieces: node 0 the root; children found through a hash of (node, code point) */
    uint64_t *tkeys;
    int32_t *tvals;
    Py_ssize_t tcap, tnodes;
    int32_t *tterm; /* per trie node: the seed piece ending there, or -1 */
    Py_ssize_t capterm;
    /* every word's nodes over the whole seed, by start then length */
    int32_t *snode_start, *snode_len, *snode_piece, *wnodes; /* wnodes[w]..wnodes[w+1] */
    Py_ssize_t nsnodes;
    /* scratch */
    Node *nodes;
    Py_ssize_t capnodes;
    int32_t *ends, *endcount;
    Py_ssize_t capends, capcount;
    float *fa, *fb;
    Py_ssize_t capf;
} Core;

static uint64_t tkey(int32_t node, int32_t cp) { return ((uint64_t)(uint32_t)node << 32 | (uint32_t)cp) + 1; }

static uint64_t hmix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static int32_t trie_child(const Core *c, int32_t node, int32_t cp) {
    uint64_t k = tkey(node, cp);
    Py_ssize_t mask = c->tcap - 1, i = (Py_ssize_t)(hmix(k) & (uint64_t)mask);
    while (c->tkeys[i]) {
        if (c->tkeys[i] == k) return c->tvals[i];
        i = (i + 1) & mask;
    }
    return -1;
}

static int trie_rehash(Core *c) {
    Py_ssize_t cap = c->tcap ? c->tcap * 2 : 1 << 16;
    uint64_t *keys = PyMem_Calloc((size_t)cap, sizeof *keys);
    int32_t *vals = PyMem_Malloc((size_t)cap * sizeof *vals);
    if (!keys || !vals) {
        PyMem_Free(keys);
        PyMem_Free(vals);
        return no_memory();
    }
    for (Py_ssize_t q = 0; q < c->tcap; q++) {
        if (!c->tkeys[q]) continue;
        Py_ssize_t i = (Py_ssize_t)(hmix(c->tkeys[q]) & (uint64_t)(cap - 1));
        while (keys[i]) i = (i + 1) & (cap - 1);
        keys[i] = c->tkeys[q];
        vals[i] = c->tvals[q];
    }
    PyMem_Free(c->tkeys);
    PyMem_Free(c->tvals);
    c->tkeys = keys;
    c->tvals = vals;
    c->tcap = cap;
    return 0;
}

static int32_t trie_add(Core *c, int32_t node, int32_t cp) {
    int32_t found = trie_child(c, node, cp);
    if (found >= 0) return found;
    if ((c->tnodes + 1) * 2 > c->tcap && trie_rehash(c) < 0) return -1;
    if (GROW(c->tterm, c->capterm, c->tnodes + 1, 1024) < 0) return -1;
    uint64_t k = tkey(node, cp);
    Py_ssize_t mask = c->tcap - 1, i = (Py_ssize_t)(hmix(k) & (uint64_t)mask);
    while (c->tkeys[i]) i = (i + 1) & mask;
    c->tkeys[i] = k;
    c->tvals[i] = (int32_t)c->tnodes;
    c->tterm[c->tnodes] = -1;
    return (int32_t)c->tnodes++;
}

/* The seed pieces that begin `text` (code points), shortest first: their seed indices into `out` (room for n). */
static int32_t prefixes(const Core *c, const int32_t *text, int32_t n, int32_t *out_piece, int32_t *out_len) {
    int32_t node = 0, k = 0;
    for (int32_t i = 0; i < n; i++) {
        node = trie_child(c, node, text[i]);
        if (node < 0) break;
        if (c->tterm[node] >= 0) {
            out_piece[k] = c->tterm[node];
            out_len[k++] = i + 1;
        }
    }
    return k;
}

static void Core_dealloc(Core *c) {
    void *owned[] = {c->wcps, c->wstart, c->wlen, c->wfreq, c->pcps, c->pstart, c->plen, c->tkeys, c->tvals,
                     c->tterm, c->snode_start, c->snode_len, c->snode_piece, c->wnodes, c->nodes, c->ends,
                     c->endcount, c->fa, c->fb};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) PyMem_Free(owned[i]);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static void *copy_buffer(Py_buffer *b) {
    void *p = PyMem_Malloc(b->len ? (size_t)b->len : 1);
    if (!p) return PyErr_NoMemory();
    memcpy(p, b->buf, (size_t)b->len);
    return p;
}

static int Core_init(Core *c, PyObject *args, PyObject *kw) {
    Py_buffer wc, wl, wf, pc, pl;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &wc, &wl, &wf, &pc, &pl)) return -1;
    int rc = -1;
    c->wcps = copy_buffer(&wc);
    c->wlen = copy_buffer(&wl);
    c->wfreq = copy_buffer(&wf);
    c->pcps = copy_buffer(&pc);
    c->plen = copy_buffer(&pl);
    c->nwords = wl.len / 4;
    c->npieces = pl.len / 4;
    c->wstart = PyMem_Malloc((size_t)(c->nwords + 1) * sizeof(int32_t));
    c->pstart = PyMem_Malloc((size_t)(c->npieces + 1) * sizeof(int32_t));
    c->wnodes = PyMem_Malloc((size_t)(c->nwords + 1) * sizeof(int32_t));
    if (!c->wcps || !c->wlen || !c->wfreq || !c->pcps || !c->plen || !c->wstart || !c->pstart || !c->wnodes) goto done;
    int32_t at = 0;
    for (Py_ssize_t i = 0; i < c->nwords; i++) c->wstart[i] = at, at += c->wlen[i];
    at = 0;
    for (Py_ssize_t i = 0; i < c->npieces; i++) c->pstart[i] = at, at += c->plen[i];
    if (trie_rehash(c) < 0 || GROW(c->tterm, c->capterm, 1, 1024) < 0) goto done;
    c->tnodes = 1;
    c->tterm[0] = -1;
    for (Py_ssize_t p = 0; p < c->npieces; p++) {
        int32_t node = 0;
        for (int32_t i = 0; i < c->plen[p] && node >= 0; i++) node = trie_add(c, node, c->pcps[c->pstart[p] + i]);
        if (node < 0) goto done;
        c->tterm[node] = (int32_t)p;
    }
    /* every word's seed nodes */
    Py_ssize_t cap = 0, n = 0;
    int32_t buf_piece[1024], buf_len[1024];
    for (Py_ssize_t w = 0; w < c->nwords; w++) {
        c->wnodes[w] = (int32_t)n;
        const int32_t *text = c->wcps + c->wstart[w];
        int32_t len = c->wlen[w];
        for (int32_t i = 0; i < len; i++) {
            int32_t lim = len - i < 1024 ? len - i : 1024;
            int32_t k = prefixes(c, text + i, lim, buf_piece, buf_len);
            if (n + k > cap) {
                Py_ssize_t grown = cap ? cap * 2 : 1 << 16;
                while (grown < n + k) grown *= 2;
                if (resize_array(&c->snode_start, grown, sizeof(int32_t)) < 0 ||
                    resize_array(&c->snode_len, grown, sizeof(int32_t)) < 0 ||
                    resize_array(&c->snode_piece, grown, sizeof(int32_t)) < 0)
                    goto done;
                cap = grown;
            }
            for (int32_t q = 0; q < k; q++) {
                c->snode_start[n] = i;
                c->snode_len[n] = buf_len[q];
                c->snode_piece[n++] = buf_piece[q];
            }
        }
    }
    c->wnodes[c->nwords] = (int32_t)n;
    c->nsnodes = n;
    rc = 0;
done:
    PyBuffer_Release(&wc);
    PyBuffer_Release(&wl);
    PyBuffer_Release(&wf);
    PyBuffer_Release(&pc);
    PyBuffer_Release(&pl);
    if (rc < 0 && !PyErr_Occurred()) PyErr_NoMemory();
    return rc;
}

/* A model given as (order, scores): per seed index, its position (or -1) and score. */
typedef struct {
    Py_buffer order, scores;
    int32_t *pos;
    float *score;
    Py_ssize_t n;
    float min_score, unk_score;
} Model;

static void model_release(Model *m) {
    PyMem_Free(m->pos);
    PyMem_Free(m->score);
    PyBuffer_Release(&m->order);
    PyBuffer_Release(&m->scores);
}

static int model_get(Core *c, PyObject *order, PyObject *scores, Model *m) {
    memset(m, 0, sizeof *m);
    if (PyObject_GetBuffer(order, &m->order, PyBUF_SIMPLE) < 0) return -1;
    if (PyObject_GetBuffer(scores, &m->scores, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&m->order);
        return -1;
    }
    m->n = m->order.len / 4;
    m->pos = PyMem_Malloc((size_t)(c->npieces ? c->npieces : 1) * sizeof *m->pos);
    m->score = PyMem_Malloc((size_t)(c->npieces ? c->npieces : 1) * sizeof *m->score);
    if (!m->pos || !m->score) {
        model_release(m);
        return no_memory();
    }
    for (Py_ssize_t i = 0; i < c->npieces; i++) m->pos[i] = -1;
    const int32_t *o = m->order.buf;
    const float *s = m->scores.buf;
    m->min_score = 3.402823466e+38F;
    for (Py_ssize_t i = 0; i < m->n; i++) {
        if (o[i] < 0 || o[i] >= c->npieces) {
            model_release(m);
            return raise_error(PyExc_ValueError, "a seed index out of range");
        }
        m->pos[o[i]] = (int32_t)i;
        m->score[o[i]] = s[i];
        if (s[i] < m->min_score) m->min_score = s[i];
    }
    m->unk_score = m->min_score - 10.0f;
    return 0;
}

/* The lattice of text[0..n) under the model, as sentencepiece populates it: per start, the living pieces shortest
 * first, then an unknown node when no piece of one character lives there. Nodes into c->nodes; the count, or -1.
 * seed_from/seed_to: the word's seed nodes (or -1: look the pieces up in the trie). */
static Py_ssize_t lattice(Core *c, const Model *m, const int32_t *text, int32_t n, Py_ssize_t seed_from,
                          Py_ssize_t seed_to) {
    Py_ssize_t k = 0, q = seed_from;
    int32_t buf_piece[1024], buf_len[1024];
    for (int32_t i = 0; i < n; i++) {
        int32_t found;
        const int32_t *pp, *pl;
        if (seed_from >= 0) {
            Py_ssize_t q0 = q;
            while (q < seed_to && c->snode_start[q] == i) q++;
            found = (int32_t)(q - q0);
            pp = c->snode_piece + q0;
            pl = c->snode_len + q0;
        } else {
            int32_t lim = n - i < 1024 ? n - i : 1024;
            found = prefixes(c, text + i, lim, buf_piece, buf_len);
            pp = buf_piece;
            pl = buf_len;
        }
        if (GROW(c->nodes, c->capnodes, k + found + 1, 4096) < 0) return -1;
        int single = 0;
        for (int32_t j = 0; j < found; j++) {
            int32_t p = pp[j];
            if (m->pos[p] < 0) continue;
            c->nodes[k++] = (Node){i, pl[j], p, m->score[p]};
            if (pl[j] == 1) single = 1;
        }
        if (!single) c->nodes[k++] = (Node){i, 1, -1, m->unk_score};
    }
    return k;
}

/* Nodes grouped by where they end (ends[endcount[p]..endcount[p+1]]), each group by start ascending. */
static int by_end(Core *c, Py_ssize_t k, int32_t n) {
    if (GROW(c->ends, c->capends, k + 1, 4096) < 0 || GROW(c->endcount, c->capcount, n + 2, 4096) < 0) return -1;
    memset(c->endcount, 0, (size_t)(n + 2) * sizeof *c->endcount);
    for (Py_ssize_t j = 0; j < k; j++) c->endcount[c->nodes[j].start + c->nodes[j].len + 1]++;
    for (int32_t p = 0; p <= n; p++) c->endcount[p + 1] += c->endcount[p];
    /* endcount[p] is now where group p starts; fill, then shift back */
    for (Py_ssize_t j = 0; j < k; j++) c->ends[c->endcount[c->nodes[j].start + c->nodes[j].len]++] = (int32_t)j;
    for (int32_t p = n; p > 0; p--) c->endcount[p] = c->endcount[p - 1];
    c->endcount[0] = 0;
    return 0;
}

static inline float log_sum_exp(float x, float y, int init) {
    if (init) return y;
    float vmin = x < y ? x : y, vmax = x < y ? y : x;
    if (vmax > vmin + 50.0f) return vmax;
    return (float)(vmax + log1p(exp((double)(vmin - vmax))));
}

static int room_f(Core *c, Py_ssize_t n) {
    if (n <= c->capf) return 0;
    if (resize_array(&c->fa, n, sizeof(float)) < 0 || resize_array(&c->fb, n, sizeof(float)) < 0) return -1;
    c->capf = n;
    return 0;
}

/* The model a call passes as its (order, scores) arguments (model_get): 0, or -1 with the error set. */
static int model_arg(Core *c, PyObject *args, Model *m) {
    PyObject *order, *scores;
    if (!PyArg_ParseTuple(args, "OO", &order, &scores)) return -1;
    return model_get(c, order, scores, m);
}

static PyObject *Core_estep(Core *c, PyObject *args) {
    Model m;
    if (model_arg(c, args, &m) < 0) return NULL;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(m.n ? m.n : 1) * (Py_ssize_t)sizeof(float));
    if (!out) goto fail;
    float *expected = (float *)PyByteArray_AS_STRING(out);
    memset(expected, 0, (size_t)(m.n ? m.n : 1) * sizeof(float));
    double likelihood = 0;
    for (Py_ssize_t w = 0; w < c->nwords; w++) {
        int32_t n = c->wlen[w];
        if (n == 0) continue;
        Py_ssize_t k = lattice(c, &m, c->wcps + c->wstart[w], n, c->wnodes[w], c->wnodes[w + 1]);
        if (k < 0 || by_end(c, k, n) < 0 || room_f(c, n + 1) < 0) goto fail;
        float *alpha = c->fa, *beta = c->fb;
        alpha[0] = 0.0f;
        for (int32_t p = 1; p <= n; p++) {
            float a = 0.0f;
            for (int32_t e = c->endcount[p]; e < c->endcount[p + 1]; e++) {
                Node *l = &c->nodes[c->ends[e]];
                a = log_sum_exp(a, l->score + alpha[l->start], e == c->endcount[p]);
            }
            alpha[p] = a;
        }
        beta[n] = 0.0f;
        Py_ssize_t j = k;
        for (int32_t p = n - 1; p >= 0; p--) {
            Py_ssize_t first = j;
            while (first > 0 && c->nodes[first - 1].start == p) first--;
            float b = 0.0f;
            for (Py_ssize_t q = first; q < j; q++) {
                Node *r = &c->nodes[q];
                b = log_sum_exp(b, r->score + beta[p + r->len], q == first);
            }
            beta[p] = b;
            j = first;
        }
        float z = alpha[n];
        float freq = (float)c->wfreq[w];
        for (Py_ssize_t q = 0; q < k; q++) {
            Node *nd = &c->nodes[q];
            int32_t pos = nd->piece >= 0 ? m.pos[nd->piece] : 0;
            float x = alpha[nd->start] + nd->score;
            x = x + beta[nd->start + nd->len];
            x = x - z;
            expected[pos] = (float)((double)expected[pos] + (double)freq * exp((double)x));
        }
        likelihood += (double)(freq * z);
    }
    model_release(&m);
    return Py_BuildValue("(Nd)", out, likelihood);
fail:
    Py_XDECREF(out);
    model_release(&m);
    return NULL;
}

static double digamma(double x) {
    double result = 0.0;
    for (; x < 7; ++x) result -= 1 / x;
    x -= 1.0 / 2.0;
    const double xx = 1.0 / x;
    const double xx2 = xx * xx;
    const double xx4 = xx2 * xx2;
    result += log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 -
              (127.0 / 30720.0) * xx4 * xx4;
    return result;
}

static PyObject *Core_mstep(Core *c, PyObject *args) {
    Py_buffer ex;
    if (!PyArg_ParseTuple(args, "y*", &ex)) return NULL;
    const float *e = ex.buf;
    Py_ssize_t n = ex.len / 4, k = 0;
    PyObject *kept = PyByteArray_FromStringAndSize(NULL, (n ? n : 1) * 4);
    PyObject *sc = PyByteArray_FromStringAndSize(NULL, (n ? n : 1) * 4);
    if (!kept || !sc) {
        Py_XDECREF(kept);
        Py_XDECREF(sc);
        PyBuffer_Release(&ex);
        return NULL;
    }
    int32_t *kp = (int32_t *)PyByteArray_AS_STRING(kept);
    float *s = (float *)PyByteArray_AS_STRING(sc);
    float sum = 0.0f;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (e[i] < 0.5f) continue;
        kp[k] = (int32_t)i;
        s[k++] = e[i];
        sum += e[i];
    }
    const float logsum = (float)digamma(sum);
    for (Py_ssize_t i = 0; i < k; i++) s[i] = (float)(digamma(s[i]) - logsum);
    PyBuffer_Release(&ex);
    if (PyByteArray_Resize(kept, k * 4) < 0 || PyByteArray_Resize(sc, k * 4) < 0) {
        Py_DECREF(kept);
        Py_DECREF(sc);
        return NULL;
    }
    return Py_BuildValue("(NN)", kept, sc);
}

/* Viterbi over c->nodes (k of them, n characters), as sentencepiece's: per node its best score and previous node
 * (index, -1 for the beginning). Fills vscore/vprev (room k); returns the best path's last node, and its score. */
static Py_ssize_t viterbi(Core *c, Py_ssize_t k, int32_t n, float *vscore, int32_t *vprev, float *best_out) {
    /* the end-of-sentence node: over the nodes ending at n */
    Py_ssize_t j = 0;
    for (int32_t p = 0; p < n; p++) {
        Py_ssize_t from = j;
        while (j < k && c->nodes[j].start == p) j++;
        for (Py_ssize_t r = from; r < j; r++) {
            float best = 0.0f;
            int32_t prev = -2;
            if (p == 0) {
                best = 0.0f + c->nodes[r].score;
                prev = -1;
            } else {
                for (int32_t e = c->endcount[p]; e < c->endcount[p + 1]; e++) {
                    int32_t l = c->ends[e];
                    float sc = vscore[l] + c->nodes[r].score;
                    if (prev == -2 || sc > best) {
                        best = sc;
                        prev = l;
                    }
                }
            }
            vscore[r] = best;
            vprev[r] = prev;
        }
    }
    float best = 0.0f;
    int32_t last = -2;
    for (int32_t e = c->endcount[n]; e < c->endcount[n + 1]; e++) {
        int32_t l = c->ends[e];
        float sc = vscore[l] + 0.0f;
        if (last == -2 || sc > best) {
            best = sc;
            last = l;
        }
    }
    *best_out = best;
    return last;
}

typedef struct {
    float *vscore;
    int32_t *vprev;
    Py_ssize_t cap;
} Vit;

static int vit_room(Vit *v, Py_ssize_t k) {
    if (k <= v->cap) return 0;
    if (resize_array(&v->vscore, k, sizeof(float)) < 0 || resize_array(&v->vprev, k, sizeof(int32_t)) < 0) return -1;
    v->cap = k;
    return 0;
}

/* The two best paths of c->nodes (A* from the end, as sentencepiece's NBest(2) with its heap): the number found;
 * path node lists into paths[0..1] (lengths into lens). */
typedef struct {
    int32_t node; /* -1: end of sentence, -3: beginning */
    int32_t next;
    float fx, gx;
} Hyp;

static int hyp_less(const Hyp *h, int32_t a, int32_t b) { return h[a].fx < h[b].fx; }

/* `value` put in the heap at `hole`, moved up past every parent it beats (libstdc++'s __push_heap). */
static void sift_up(const Hyp *h, int32_t *heap, Py_ssize_t hole, int32_t value) {
    for (Py_ssize_t parent = (hole - 1) / 2; hole > 0 && hyp_less(h, heap[parent], value); parent = (hole - 1) / 2) {
        heap[hole] = heap[parent];
        hole = parent;
    }
    heap[hole] = value;
}

static void heap_push(const Hyp *h, int32_t *heap, Py_ssize_t len) { sift_up(h, heap, len - 1, heap[len - 1]); }

static int32_t heap_pop(const Hyp *h, int32_t *heap, Py_ssize_t len) { /* len before the pop */
    int32_t top = heap[0], value = heap[len - 1];
    Py_ssize_t n = len - 1, hole = 0, child = 0;
    heap[len - 1] = top;
    if (n == 0) return top;
    while (child < (n - 1) / 2) {
        child = 2 * (child + 1);
        if (hyp_less(h, heap[child], heap[child - 1])) child--;
        heap[hole] = heap[child];
        hole = child;
    }
    if ((n & 1) == 0 && child == (n - 2) / 2) {
        child = 2 * (child + 1);
        heap[hole] = heap[child - 1];
        hole = child - 1;
    }
    sift_up(h, heap, hole, value);
    return top;
}

typedef struct {
    Hyp *hyps;
    Py_ssize_t nh, caph;
    int32_t *heap;
    Py_ssize_t nheap, capheap;
} Agenda;

static int32_t new_hyp(Agenda *a, int32_t node, int32_t next, float fx, float gx) {
    if (GROW(a->hyps, a->caph, a->nh + 1, 256) < 0) return -1;
    a->hyps[a->nh] = (Hyp){node, next, fx, gx};
    return (int32_t)a->nh++;
}

static int agenda_push(Agenda *a, int32_t hyp) {
    if (GROW(a->heap, a->capheap, a->nheap + 1, 256) < 0) return -1;
    a->heap[a->nheap++] = hyp;
    heap_push(a->hyps, a->heap, a->nheap);
    return 0;
}

/* Returns the number of paths (0..2), or -1 on error; path p's nodes (start to end) in paths[p], count in lens[p]. */
static int nbest2(Core *c, Py_ssize_t k, int32_t n, Vit *v, Agenda *a, int32_t *paths, int32_t *lens) {
    float eos_score;
    if (vit_room(v, k) < 0) return -1;
    viterbi(c, k, n, v->vscore, v->vprev, &eos_score);
    a->nh = a->nheap = 0;
    int32_t eos = new_hyp(a, -1, -1, eos_score, 0.0f);
    if (eos < 0 || agenda_push(a, eos) < 0) return -1;
    int found = 0;
    while (a->nheap) {
        int32_t top = heap_pop(a->hyps, a->heap, a->nheap);
        a->nheap--;
        Hyp h = a->hyps[top];
        if (h.node == -3) {
            int32_t len = 0;
            for (int32_t q = h.next; q >= 0 && a->hyps[q].next >= 0; q = a->hyps[q].next) {
                if (len >= n) break;
                paths[found * n + len++] = a->hyps[q].node;
            }
            lens[found++] = len;
            if (found == 2) break;
            continue;
        }
        int32_t pos = h.node == -1 ? n : c->nodes[h.node].start;
        if (pos == 0) {
            int32_t hyp = new_hyp(a, -3, top, 0.0f + h.gx, 0.0f + h.gx);
            if (hyp < 0 || agenda_push(a, hyp) < 0) return -1;
        } else {
            for (int32_t e = c->endcount[pos]; e < c->endcount[pos + 1]; e++) {
                int32_t l = c->ends[e];
                int32_t hyp = new_hyp(a, l, top, v->vscore[l] + h.gx, c->nodes[l].score + h.gx);
                if (hyp < 0 || agenda_push(a, hyp) < 0) return -1;
            }
        }
        if (a->nh > 500000) return raise_error(PyExc_RuntimeError, "n-best search too large");
    }
    return found;
}

static PyObject *Core_prune(Core *c, PyObject *args) {
    PyObject *order, *scores;
    Py_ssize_t desired;
    float shrinking;
    if (!PyArg_ParseTuple(args, "OOnf", &order, &scores, &desired, &shrinking)) return NULL;
    Model m;
    if (model_get(c, order, scores, &m) < 0) return NULL;
    const int32_t *ord = m.order.buf;
    Py_ssize_t np = m.n;
    uint8_t *keep = PyMem_Malloc((size_t)(np ? np : 1));
    int32_t *alt_start = PyMem_Malloc((size_t)(np + 1) * sizeof(int32_t)), *alts = NULL, *paths = NULL, *lens = NULL;
    Py_ssize_t nalts = 0, capalts = 0;
    float *freq = PyMem_Calloc((size_t)(np ? np : 1), sizeof(float));
    Vit v = {NULL, NULL, 0};
    Agenda ag = {NULL, 0, 0, NULL, 0, 0};
    PyObject *new_order = NULL, *losses = NULL, *result = NULL;
    int32_t *cand_pos = NULL;
    float *cand_loss = NULL;
    if (!keep || !alt_start || !freq) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < np; i++) {
        int32_t p = ord[i], n = c->plen[p];
        alt_start[i] = (int32_t)nalts;
        Py_ssize_t k = lattice(c, &m, c->pcps + c->pstart[p], n, -1, -1);
        if (k < 0 || by_end(c, k, n) < 0) goto done;
        if (resize_array(&paths, 2 * n, sizeof(int32_t)) < 0 || resize_array(&lens, 2, sizeof(int32_t)) < 0) goto done;
        int found = nbest2(c, k, n, &v, &ag, paths, lens);
        if (found < 0) goto done;
        if (found == 1) {
            keep[i] = 1;
        } else if (lens[0] >= 2) {
            keep[i] = 0;
        } else {
            keep[i] = 1;
            if (lens[0] == 1) {
                if (GROW(alts, capalts, nalts + lens[1], 1024) < 0) goto done;
                for (int32_t q = 0; q < lens[1]; q++) {
                    Node *nd = &c->nodes[paths[n + q]];
                    alts[nalts++] = nd->piece >= 0 ? m.pos[nd->piece] : 0;
                }
            }
        }
    }
    alt_start[np] = (int32_t)nalts;
    int64_t tokens = 0;
    for (Py_ssize_t w = 0; w < c->nwords; w++) {
        int32_t n = c->wlen[w];
        if (n == 0) continue;
        Py_ssize_t k = lattice(c, &m, c->wcps + c->wstart[w], n, c->wnodes[w], c->wnodes[w + 1]);
        if (k < 0 || by_end(c, k, n) < 0 || vit_room(&v, k) < 0) goto done;
        float best;
        int32_t last = (int32_t)viterbi(c, k, n, v.vscore, v.vprev, &best);
        for (int32_t q = last; q >= 0; q = v.vprev[q]) {
            Node *nd = &c->nodes[q];
            int32_t pos = nd->piece >= 0 ? m.pos[nd->piece] : 0;
            freq[pos] += (float)c->wfreq[w];
            tokens += c->wfreq[w];
        }
    }
    double acc = 0.0;
    for (Py_ssize_t i = 0; i < np; i++) acc += freq[i];
    const float sum = (float)acc;
    const float logsum = (float)log((double)sum);
    new_order = PyByteArray_FromStringAndSize(NULL, (np ? np : 1) * 4);
    losses = PyByteArray_FromStringAndSize(NULL, (np ? np : 1) * 4);
    cand_pos = PyMem_Malloc((size_t)(np ? np : 1) * sizeof *cand_pos);
    cand_loss = PyMem_Malloc((size_t)(np ? np : 1) * sizeof *cand_loss);
    if (!new_order || !losses || !cand_pos || !cand_loss) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int32_t *out = (int32_t *)PyByteArray_AS_STRING(new_order);
    float *loss = (float *)PyByteArray_AS_STRING(losses);
    Py_ssize_t nout = 0, ncand = 0;
    for (Py_ssize_t i = 0; i < np; i++) {
        if (freq[i] == 0 || !keep[i]) {
            loss[i] = NAN;
        } else if (alt_start[i] == alt_start[i + 1]) {
            out[nout++] = (int32_t)i;
            loss[i] = INFINITY;
        } else {
            const float logprob_sp = (float)(log((double)freq[i]) - logsum);
            size_t nalt = (size_t)(alt_start[i + 1] - alt_start[i]);
            const float logsum_alt = (float)log((double)(sum + freq[i] * (float)(nalt - 1)));
            float logprob_alt = 0.0f;
            for (int32_t q = alt_start[i]; q < alt_start[i + 1]; q++)
                logprob_alt = (float)(logprob_alt + (log((double)(freq[alts[q]] + freq[i])) - logsum_alt));
            float F = freq[i] / sum;
            float l = F * (logprob_sp - logprob_alt);
            loss[i] = l;
            cand_pos[ncand] = (int32_t)i;
            cand_loss[ncand++] = l;
        }
    }
    /* candidates by loss, highest first, then by position: a stable merge of runs would do; an insertion-free sort */
    {
        int32_t *idx = PyMem_Malloc((size_t)(ncand ? ncand : 1) * sizeof *idx), *tmp = PyMem_Malloc((size_t)(ncand ? ncand : 1) * sizeof *tmp);
        if (!idx || !tmp) {
            PyMem_Free(idx);
            PyMem_Free(tmp);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < ncand; i++) idx[i] = (int32_t)i;
        for (Py_ssize_t width = 1; width < ncand; width *= 2) { /* bottom-up merge sort: loss desc, position asc */
            for (Py_ssize_t lo = 0; lo < ncand; lo += 2 * width) {
                Py_ssize_t mid = lo + width < ncand ? lo + width : ncand, hi = lo + 2 * width < ncand ? lo + 2 * width : ncand;
                Py_ssize_t a = lo, b = mid, t = lo;
                while (a < mid && b < hi) {
                    float la = cand_loss[idx[a]], lb = cand_loss[idx[b]];
                    if (lb > la) tmp[t++] = idx[b++];
                    else tmp[t++] = idx[a++];
                }
                while (a < mid) tmp[t++] = idx[a++];
                while (b < hi) tmp[t++] = idx[b++];
            }
            memcpy(idx, tmp, (size_t)ncand * sizeof *idx);
        }
        int pruned = (int)(shrinking * (float)np);
        if (pruned < (int)desired) pruned = (int)desired;
        for (Py_ssize_t i = 0; i < ncand; i++) {
            if (nout == pruned) break;
            out[nout++] = cand_pos[idx[i]];
        }
        PyMem_Free(idx);
        PyMem_Free(tmp);
    }
    if (PyByteArray_Resize(new_order, nout * 4) < 0) goto done;
    result = Py_BuildValue("(OOL)", new_order, losses, (long long)tokens);
done:
    Py_XDECREF(new_order);
    Py_XDECREF(losses);
    PyMem_Free(keep);
    PyMem_Free(alt_start);
    PyMem_Free(alts);
    PyMem_Free(paths);
    PyMem_Free(lens);
    PyMem_Free(freq);
    PyMem_Free(v.vscore);
    PyMem_Free(v.vprev);
    PyMem_Free(ag.hyps);
    PyMem_Free(ag.heap);
    PyMem_Free(cand_pos);
    PyMem_Free(cand_loss);
    model_release(&m);
    return result;
}

static PyObject *Core_unreachable(Core *c, PyObject *args) {
    Model m;
    if (model_arg(c, args, &m) < 0) return NULL;
    const int32_t *ord = m.order.buf;
    Vit v = {NULL, NULL, 0};
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (m.n ? m.n : 1) * 4), *result = NULL;
    if (!out) goto done;
    int32_t *kept = (int32_t *)PyByteArray_AS_STRING(out);
    Py_ssize_t nk = 0;
    for (Py_ssize_t i = 0; i < m.n; i++) {
        int32_t p = ord[i], n = c->plen[p];
        Py_ssize_t k = lattice(c, &m, c->pcps + c->pstart[p], n, -1, -1);
        if (k < 0 || by_end(c, k, n) < 0 || vit_room(&v, k) < 0) goto done;
        Py_ssize_t self_node = -1;
        for (Py_ssize_t q = 0; q < k && c->nodes[q].start == 0; q++)
            if (c->nodes[q].piece == p && c->nodes[q].len == n) {
                self_node = q;
                break;
            }
        if (self_node < 0) continue;
        float original = c->nodes[self_node].score, best;
        c->nodes[self_node].score = -INFINITY;
        Py_ssize_t last = viterbi(c, k, n, v.vscore, v.vprev, &best);
        if (last >= 0 && best > original) continue;
        kept[nk++] = (int32_t)i;
    }
    if (PyByteArray_Resize(out, nk * 4) < 0) goto done;
    result = Py_NewRef(out);
done:
    Py_XDECREF(out);
    PyMem_Free(v.vscore);
    PyMem_Free(v.vprev);
    model_release(&m);
    return result;
}

static PyObject *Core_tokens(Core *c, PyObject *args) {
    Model m;
    if (model_arg(c, args, &m) < 0) return NULL;
    Vit v = {NULL, NULL, 0};
    int64_t tokens = 0;
    for (Py_ssize_t w = 0; w < c->nwords; w++) {
        int32_t n = c->wlen[w];
        if (n == 0) continue;
        Py_ssize_t k = lattice(c, &m, c->wcps + c->wstart[w], n, c->wnodes[w], c->wnodes[w + 1]);
        if (k < 0 || by_end(c, k, n) < 0 || vit_room(&v, k) < 0) {
            PyMem_Free(v.vscore);
            PyMem_Free(v.vprev);
            model_release(&m);
            return NULL;
        }
        float best;
        for (int32_t q = (int32_t)viterbi(c, k, n, v.vscore, v.vprev, &best); q >= 0; q = v.vprev[q]) tokens += c->wfreq[w];
    }
    PyMem_Free(v.vscore);
    PyMem_Free(v.vprev);
    model_release(&m);
    return PyLong_FromLongLong(tokens);
}

static PyMethodDef core_methods[] = {
    {"estep", (PyCFunction)Core_estep, METH_VARARGS, "expected uses by position, and the log-likelihood"},
    {"mstep", (PyCFunction)Core_mstep, METH_VARARGS, "kept positions and their new scores"},
    {"prune", (PyCFunction)Core_prune, METH_VARARGS, "the pruned order, losses and corpus tokens"},
    {"unreachable", (PyCFunction)Core_unreachable, METH_VARARGS, "the positions Viterbi can still reach"},
    {"tokens", (PyCFunction)Core_tokens, METH_VARARGS, "the corpus's length in pieces"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    TWIN_TYPE("app.engines.sentencepiece._spm_unigram.Core", Core, Py_TPFLAGS_DEFAULT,
              "sentencepiece's unigram EM over a corpus's words and its seed pieces", Core_init, Core_dealloc),
    .tp_methods = core_methods,
};

static PyMethodDef methods[] = {
    {"seed_candidates", seed_candidates, METH_VARARGS, "the seed pieces a suffix array finds (see the module doc)"},
    {NULL, NULL, 0, NULL},
};

TWIN_MODULE_WITH_TYPES(_spm_unigram, NULL, methods, 1, &CoreType)
