out\ file.o: t.cpp inc/traits.hpp inc/../dir\ with\ space/x.h
