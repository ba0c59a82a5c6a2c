// The header-only shims live in include/CZlib.h; this file keeps the target a C target.
