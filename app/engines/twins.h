/* What every compiled twin of a hot loop shares (app/engines/_merge.c, sentencepiece/_lattice.c and
 * _unigram_train.c, training/_train.c): growable arrays, the errors they raise and the module boilerplate.
 *
 * Each twin includes this header first (it brings Python.h). setup.py lists it in every extension's `depends` and
 * the Makefile among the install's prerequisites, so a change here rebuilds every twin.
 */
#ifndef TOKENPLAY_TWINS_H
#define TOKENPLAY_TWINS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* -1 with MemoryError set: what a function that returns int answers when an allocation failed. */
static inline int no_memory(void) {
    PyErr_NoMemory();
    return -1;
}

/* -1 with `type` raised, saying `message`. */
static inline int raise_error(PyObject *type, const char *message) {
    PyErr_SetString(type, message);
    return -1;
}

/* The array pointed to by `array` (the address of an array variable of any pointer type) reallocated to `n` items
 * of `size` bytes: 0, or -1 with MemoryError set (the array unchanged). The variable is read and written with
 * memcpy, so its own type can be any pointer type. */
static inline int resize_array(void *array, Py_ssize_t n, size_t size) {
    void *items, *grown;
    memcpy(&items, array, sizeof items);
    grown = PyMem_Realloc(items, (size_t)n * size);
    if (!grown) return no_memory();
    memcpy(array, &grown, sizeof grown);
    return 0;
}

/* Room for at least `need` items in a growable array of capacity *cap (`array` as for resize_array): twice the
 * capacity (`first` items for an empty one), or `need` when that is more. 0, or -1 with MemoryError set (the
 * array and *cap unchanged). */
static inline int grow_array(void *array, Py_ssize_t *cap, Py_ssize_t need, size_t size, Py_ssize_t first) {
    if (need <= *cap) return 0;
    Py_ssize_t grown = *cap ? 2 * *cap : first;
    if (grown < need) grown = need;
    if (resize_array(array, grown, size) < 0) return -1;
    *cap = grown;
    return 0;
}

/* grow_array for an array variable and its capacity variable: GROW(h->items, h->cap, h->len + 1, 64). */
#define GROW(items, cap, need, first) grow_array(&(items), &(cap), (need), sizeof *(items), (first))

/* The module `name` (a twin with only functions, listed in `methods`): its definition and its PyInit_<name>. */
#define TWIN_MODULE(name, doc, methods)                                                                     \
    static struct PyModuleDef name##_module = {PyModuleDef_HEAD_INIT, #name, doc, -1, methods};             \
    PyMODINIT_FUNC PyInit_##name(void) { return PyModule_Create(&name##_module); }

#endif
