/*
 * Included once by each libFuzzer target (the fuzz/ folders): libFuzzer's
 * entry points, and the one-time setup every target shares (logging down
 * to errors: a guest misusing a device is logged once per site, which
 * would only slow the fuzzer). A target with more to set up defines
 * fz_setup(), which runs after that.
 */
#ifndef LAGVISOR_COMMON_FUZZ_TARGET_H
#define LAGVISOR_COMMON_FUZZ_TARGET_H

#include "common/fuzz_input.h"
#include "common/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
void fz_setup(void) __attribute__((weak));

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	if (fz_setup)
		fz_setup();
	return 0;
}

#endif
