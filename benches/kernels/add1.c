/* The warm-dispatch benchmark's kernel: as small as a call can be, so the
   measured time is the dispatch, not the work. */
int add1(int x) { return x + 1; }
