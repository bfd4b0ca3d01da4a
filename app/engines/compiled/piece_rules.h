/* Which pieces sentencepiece's trainers may make (its IsValidSentencePiece), shared by the compiled twins of its
 * BPE trainer (_spm_train.c, over character ids whose classes it looks up once) and its unigram trainer
 * (_spm_unigram.c, over code points); the Python rule is training_corpus.PieceRule.
 *
 * Before including this header a file defines PIECE_CHARS, the type it asks about characters through, and four
 * questions about character `c` of a piece: PIECE_BANNED(chars, c) (never in a piece: U+2585, NUL, the meta-piece
 * boundary, a space, a surrogate), PIECE_SPACE(chars, c) (U+2581), PIECE_DECIMAL(chars, c) (0-9 and their full-width
 * forms) and PIECE_SCRIPT(chars, c) (its script, Hiragana and Katakana counted as Han; INT32_MAX for Inherited).
 */
#ifndef TOKENPLAY_PIECE_RULES_H
#define TOKENPLAY_PIECE_RULES_H

#include <stdint.h>

/* The trainer's flags, as training_corpus passes them. */
enum {
    SPLIT_BY_SCRIPT = 1,
    SPLIT_BY_NUMBER = 2,
    SPLIT_DIGITS = 4,
    SPLIT_BY_WHITESPACE = 8,
    WHITESPACE_AS_SUFFIX = 16,
    WHITESPACE_ONLY_PIECES = 32,
};

/* Whether the `n` characters at `p` may make a piece under `flags`, at most `max_len` of them. */
static int piece_allowed(const PIECE_CHARS *chars, const int32_t *p, int32_t n, int flags, int max_len) {
    const int32_t any = INT32_MIN;
    if (n == 0 || n > max_len) return 0;
    int all_ws = 1;
    for (int32_t i = 0; i < n; i++)
        if (!PIECE_SPACE(chars, p[i])) all_ws = 0;
    int split_ws = flags & SPLIT_BY_WHITESPACE;
    int32_t prev = any;
    for (int32_t pos = 0; pos < n; pos++) {
        int32_t c = p[pos];
        if (PIECE_BANNED(chars, c)) return 0;
        if (PIECE_SPACE(chars, c)) {
            if (!(flags & WHITESPACE_ONLY_PIECES) || !all_ws) {
                if (flags & WHITESPACE_AS_SUFFIX) {
                    if ((split_ws && pos < n - 1) || (!split_ws && pos < n - 1 && pos == 0)) return 0;
                } else if ((split_ws && pos > 0) || (!split_ws && pos > 0 && pos == n - 1)) {
                    return 0;
                }
            }
            continue;
        }
        int32_t s = PIECE_SCRIPT(chars, c);
        if (s == INT32_MAX) s = prev; /* Inherited: the script of the character before */
        int decimal = PIECE_DECIMAL(chars, c);
        if (decimal && !(flags & SPLIT_BY_NUMBER)) s = any;
        if (decimal && (flags & SPLIT_DIGITS) && n > 1) return 0;
        if ((flags & SPLIT_BY_SCRIPT) && s != any && prev != any && prev != s) return 0;
        prev = s;
    }
    return 1;
}

#endif
