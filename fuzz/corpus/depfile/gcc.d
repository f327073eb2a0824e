c_blob.so: k.c /usr/include/stdc-predef.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h
