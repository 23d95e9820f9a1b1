/* SPDX-License-Identifier: MIT */
/* An instruction profile for `make bench` runs: a QEMU TCG plugin that counts
 * every translation block's executions and writes, at each execution of the
 * guest address mark=ADDR (iobench_mark() in tests/bench/linux/iobench.c)
 * and at exit, the instructions each block start executed since the last
 * cut: "phase N" then "VADDR INSNS" lines (hex vaddr, decimal count).
 * scripts/profile.py attributes them to functions. Under -icount QEMU runs
 * one vCPU at a time, so plain counters are exact. With per_hart=on each
 * line has a third field, the hart (QEMU vCPU index, below MAX_HARTS) that
 * executed them: what the host's hart 0 does while a guest runs on hart 1.
 *   -plugin build/bench/tbprof.so,mark=0x10abc,out=FILE[,per_hart=on] */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_HARTS	8

struct block {
	uint64_t vaddr;
	uint64_t insns;		/* per execution */
	uint64_t execs[MAX_HARTS];	/* since the last cut, by hart ([0]: all, without per_hart) */
	struct block *next;	/* every block ever translated (blocks are never freed) */
};

static struct block *blocks;
static uint64_t mark;
static FILE *out;
static unsigned int phase;
static bool per_hart;

static void cut(void)
{
	fprintf(out, "phase %u\n", phase++);
	for (struct block *b = blocks; b; b = b->next) {
		for (unsigned int h = 0; h < MAX_HARTS; h++) {
			if (!b->execs[h])
				continue;
			if (per_hart)
				fprintf(out, "%" PRIx64 " %" PRIu64 " %u\n", b->vaddr,
					b->execs[h] * b->insns, h);
			else
				fprintf(out, "%" PRIx64 " %" PRIu64 "\n", b->vaddr,
					b->execs[h] * b->insns);
			b->execs[h] = 0;
		}
	}
	fflush(out);
}

static void on_exec(unsigned int vcpu, void *udata)
{
	struct block *b = udata;

	b->execs[per_hart && vcpu < MAX_HARTS ? vcpu : 0]++;
}

static void on_mark(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	cut();
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = calloc(1, sizeof(*b));

	(void)id;
	if (!b)
		abort();
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	if (mark && b->vaddr == mark)	/* cut before the mark's own block counts */
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	cut();
	fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = "tbprof.out";

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 0);
		else if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strcmp(argv[i], "per_hart=on"))
			per_hart = true;
		else {
			fprintf(stderr, "tbprof: unknown argument %s (mark=ADDR, out=FILE, per_hart=on)\n",
				argv[i]);
			return -1;
		}
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
