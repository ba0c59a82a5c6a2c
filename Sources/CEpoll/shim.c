// The headers are all this target is (include/CEpoll.h); this file keeps it a C target.
