#ifndef GUEST_SERIAL_H
#define GUEST_SERIAL_H

#include <stddef.h>

void serial_init(void);
/* Unlocked: callers serialise (printf.c holds the console lock). */
void serial_write(const char *s, size_t len);

#endif
