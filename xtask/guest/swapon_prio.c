/* swapon_prio DEVICE PRIORITY: swapon with a priority (busybox-static's
 * swapon has no -p). Built static with musl-gcc by `cargo xtask guest-test`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/swap.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: swapon_prio DEVICE PRIORITY\n");
		return 2;
	}
	int prio = atoi(argv[2]);
	int flags = SWAP_FLAG_PREFER |
		    ((prio << SWAP_FLAG_PRIO_SHIFT) & SWAP_FLAG_PRIO_MASK);
	if (swapon(argv[1], flags) != 0) {
		fprintf(stderr, "swapon %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
