/* What every compiled twin of a hot loop shares (app/engines/_merge.c, bpe/_pieces.c, sentencepiece/_chunks.c,
 * _lattice.c, _spm_train.c and _spm_unigram.c, training/_train.c): growable arrays, the errors they raise, and the boilerplate
 * of their types and modules.
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

/* The start of a type's definition that Python code can make: its dotted `name`, the C struct of its objects, its
 * flags and doc, made by PyType_GenericNew and then `init`, freed by `dealloc`. */
#define TWIN_TYPE(name, object, flags, doc, init, dealloc)                                                   \
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = name, .tp_basicsize = sizeof(object), .tp_flags = (flags),       \
    .tp_doc = doc, .tp_new = PyType_GenericNew, .tp_init = (initproc)(init), .tp_dealloc = (destructor)(dealloc)

/* The module of `def` with its `n` types made ready, the first `shown` of them added to it by the last part of their
 * dotted name (the others, iterators say, only ready): the module, or NULL with the error set. */
static inline PyObject *twin_module_with_types(PyModuleDef *def, PyTypeObject **types, int n, int shown) {
    for (int i = 0; i < n; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *mod = PyModule_Create(def);
    for (int i = 0; mod && i < shown; i++) {
        const char *dot = strrchr(types[i]->tp_name, '.');
        if (PyModule_AddObjectRef(mod, dot ? dot + 1 : types[i]->tp_name, (PyObject *)types[i]) < 0) Py_CLEAR(mod);
    }
    return mod;
}

/* The module `name` with functions `methods` (or NULL) and the types that follow, the first `shown` of them added
 * to it by name: its definition and its PyInit_<name>. */
#define TWIN_MODULE_WITH_TYPES(name, doc, methods, shown, ...)                                              \
    static struct PyModuleDef name##_module = {PyModuleDef_HEAD_INIT, #name, doc, -1, methods};             \
    PyMODINIT_FUNC PyInit_##name(void) {                                                                    \
        PyTypeObject *types[] = {__VA_ARGS__};                                                              \
        return twin_module_with_types(&name##_module, types, (int)(sizeof types / sizeof *types), shown);   \
    }

/* The module `name` (a twin with only functions, listed in `methods`): its definition and its PyInit_<name>. */
#define TWIN_MODULE(name, doc, methods)                                                                     \
    static struct PyModuleDef name##_module = {PyModuleDef_HEAD_INIT, #name, doc, -1, methods};             \
    PyMODINIT_FUNC PyInit_##name(void) { return PyModule_Create(&name##_module); }

#endif
