#ifndef CZLIB_H
#define CZLIB_H
#include <zlib.h>

/// deflateInit2 and inflateInit2 are macros in zlib.h; Swift cannot import them.
static inline int CZlib_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}

static inline int CZlib_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}

#endif
