/* pbtxt.h - protobuf text format to binary wire format, for the messages vigil imports
 * (GraphDef and what it contains, MetaGraphDef, SavedModel). The text is converted with
 * a built-in schema of field names and numbers, then decoded by the same binary reader,
 * so text and binary inputs go through one validating decoder. */
#ifndef VG_PBTXT_H
#define VG_PBTXT_H

#include "io/io.h"

typedef enum vg__pbtxt_root { VG__PBTXT_GRAPH_DEF, VG__PBTXT_META_GRAPH_DEF, VG__PBTXT_SAVED_MODEL } vg__pbtxt_root;

/* Converts text (len bytes, need not be NUL-terminated) of a message of type root into
 * wire format appended to out. Unknown field names are skipped (value or block), as the
 * binary reader skips unknown numbers. Fails with INVALID_ARGUMENT naming the line and
 * the offending token (syntax error, bad number, unknown enum value, nesting deeper than
 * 64) or RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__pbtxt_to_binary(const char *text, size_t len, vg__pbtxt_root root, vg__pb_buf *out,
                                      vg_status *st);

/* True when bytes look like protobuf text rather than wire format (only printable
 * characters and whitespace; the wire format of any NodeDef has control bytes). */
VG_HIDDEN bool vg__pbtxt_looks_like_text(const void *bytes, size_t len);

/* TF DataType enum name ("DT_FLOAT") of a number, NULL when out of the table. */
VG_HIDDEN const char *vg__pbtxt_dtype_name(int dt);

#endif
