/*
 * utf8.c - strict UTF-8 validation for inbound lines.
 *
 * MCP messages are UTF-8 JSON; a line that is not well-formed UTF-8 is a
 * parse error (policy P3), whether the bad bytes sit inside a string or not.
 */
#include "transport/tp.h"

int tp_utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need;
		unsigned char lo = 0x80, hi = 0xbf;
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0; /* overlong */
			else if (c == 0xed)
				hi = 0x9f; /* UTF-16 surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90; /* overlong */
			else if (c == 0xf4)
				hi = 0x8f; /* past U+10FFFF */
		} else {
			return 0;
		}
		if (len - i <= need)
			return 0;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (size_t k = 2; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += need + 1;
	}
	return 1;
}
