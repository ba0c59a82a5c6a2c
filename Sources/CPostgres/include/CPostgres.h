#ifndef CPOSTGRES_H
#define CPOSTGRES_H
// libpq, PostgreSQL's C client (Debian libpq-dev: /usr/include/postgresql). The include
// path is the Debian one; pkg-config is not needed.
#include <postgresql/libpq-fe.h>

#endif
