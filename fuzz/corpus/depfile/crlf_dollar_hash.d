out.o: a.cpp \
 b$$.h \
 c\#d.h

b$$.h:
