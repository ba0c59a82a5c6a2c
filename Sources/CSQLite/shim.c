// SQLite needs no wrappers beyond the header's inline function; this file keeps the target a C target.
#include "CSQLite.h"
