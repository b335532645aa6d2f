/* Formatting and the console lock; see printf.h for what is supported. */
#include "printf.h"

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"
#include "serial.h"
#include "string.h"

#define PRINT_BUF 512

struct out {
	char *buf;
	size_t size;
	size_t len;   /* characters produced, may exceed size */
};

static void out_char(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void out_padded(struct out *o, const char *s, size_t n, int width,
		       bool left, char pad)
{
	int fill = width > (int)n ? width - (int)n : 0;

	/* Zero padding goes after a sign: "-0042", not "00-42". */
	if (!left && pad == '0' && n && *s == '-') {
		out_char(o, '-');
		s++, n--;
	}
	if (!left)
		while (fill-- > 0)
			out_char(o, pad);
	while (n--)
		out_char(o, *s++);
	if (left)
		while (fill-- > 0)
			out_char(o, ' ');
}

/* Digits of v in `base` into tmp (at most 22 for octal 64-bit), returns count. */
static size_t fmt_unsigned(char *tmp, uint64_t v, unsigned base, bool upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char rev[24];
	size_t n = 0, i;

	do {
		rev[n++] = digits[v % base];
		v /= base;
	} while (v);
	for (i = 0; i < n; i++)
		tmp[i] = rev[n - 1 - i];
	return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { .buf = buf, .size = size, .len = 0 };

	for (; *fmt; fmt++) {
		bool left = false;
		char pad = ' ';
		int width = 0, lng = 0;
		char tmp[32];
		size_t n;
		uint64_t u;

		if (*fmt != '%') {
			out_char(&o, *fmt);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else
				break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);

			n = 0;
			if (v < 0) {
				tmp[n++] = '-';
				u = -(uint64_t)v;
			} else {
				u = (uint64_t)v;
			}
			n += fmt_unsigned(tmp + n, u, 10, false);
			out_padded(&o, tmp, n, width, left, pad);
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			n = fmt_unsigned(tmp, u, *fmt == 'u' ? 10 : *fmt == 'o' ? 8 : 16,
					 *fmt == 'X');
			out_padded(&o, tmp, n, width, left, pad);
			break;
		case 'p':
			tmp[0] = '0';
			tmp[1] = 'x';
			n = 2 + fmt_unsigned(tmp + 2, (uintptr_t)va_arg(ap, void *), 16, false);
			out_padded(&o, tmp, n, width, left, ' ');
			break;
		case 'c':
			tmp[0] = (char)va_arg(ap, int);
			out_padded(&o, tmp, 1, width, left, ' ');
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);

			if (!s)
				s = "(null)";
			out_padded(&o, s, strlen(s), width, left, ' ');
			break;
		}
		case '%':
			out_char(&o, '%');
			break;
		case '\0':
			fmt--;   /* a lone '%' at the end: stop at the NUL */
			break;
		default:
			out_char(&o, '%');
			out_char(&o, *fmt);
			break;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static struct spinlock console;

unsigned long console_lock(void)
{
	return spin_lock_irqsave(&console);
}

void console_unlock(unsigned long flags)
{
	spin_unlock_irqrestore(&console, flags);
}

static int vprint_raw(const char *fmt, va_list ap)
{
	char buf[PRINT_BUF];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	serial_write(buf, n < PRINT_BUF ? (size_t)n : PRINT_BUF - 1);
	return n;
}

int vprintf(const char *fmt, va_list ap)
{
	unsigned long flags = console_lock();
	int n = vprint_raw(fmt, ap);

	console_unlock(flags);
	return n;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

int printf_locked(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprint_raw(fmt, ap);
	va_end(ap);
	return n;
}

void puts(const char *s)
{
	printf("%s\n", s);
}

int printf_emergency(const char *fmt, ...)
{
	va_list ap;
	bool locked = false;
	int n;

	irq_disable();
	for (unsigned i = 0; i < 1000000 && !locked; i++)
		locked = spin_trylock(&console);
	va_start(ap, fmt);
	n = vprint_raw(fmt, ap);
	va_end(ap);
	if (locked)
		spin_unlock(&console);
	return n;
}
