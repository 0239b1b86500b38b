/* Private to the extension module promptops.parsing._checks, built from _checks.c (the Checks type, the module
 * definition and its init), _checks_keys.c (the plain_keys scan) and _checks_members.c (the Members type): what
 * one file defines and another uses.
 * Every .c file of the module includes this header first, so Python.h comes before any standard header.
 */
#ifndef PROMPTOPS_PARSING_CHECKS_H
#define PROMPTOPS_PARSING_CHECKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Shared between the module's files, not exported from the shared library: PyInit__checks stays its only
   exported symbol, as when the module was one file of static functions. */
#if defined(__GNUC__) && !defined(_WIN32) && !defined(__CYGWIN__)
#define CHECKS_INTERNAL __attribute__((visibility("hidden")))
#else
#define CHECKS_INTERNAL
#endif

/* _checks_keys.c: the module function plain_keys(text, max_depth) and its docstring. */
CHECKS_INTERNAL extern const char checks_plain_keys_doc[];
CHECKS_INTERNAL PyObject *checks_plain_keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* _checks_members.c: the type Members (repeated keys and depth, from a decoded value). */
CHECKS_INTERNAL extern PyTypeObject checks_members_type;

#endif /* PROMPTOPS_PARSING_CHECKS_H */
