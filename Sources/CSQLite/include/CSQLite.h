#ifndef CSQLITE_H
#define CSQLITE_H
// SQLite (Debian libsqlite3-dev), for the database the file backend keeps the Spins made
// at run time in (SpinStorage/SQLite).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
