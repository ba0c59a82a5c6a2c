// libpq needs no wrappers (no function-like macros are used); this file keeps the target a C target.
