/*
 * dlib.c - opening an optional shared library at run time: see dlib.h.
 */
#include <dlfcn.h>

#include "transport/dlib.h"

void *tp_dlib_open(const char *soname, const char *devname, const tp_dlib_sym *syms, size_t n)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h && devname)
		h = dlopen(devname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			dlclose(h);
			return NULL;
		}
	}
	return h;
}
