// The header-only shims live in include/COpenSSL.h; this file keeps the target a C target.
