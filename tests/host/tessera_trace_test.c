// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of job traces (TSR_JOB_TRACE): one record per command
 * on the modeled clock, agreeing with the completion record; a full
 * buffer counts what it dropped; a trace buffer the chip cannot write
 * fails the job before its first command.
 */
#include "kselftest_harness.h"

#include "tessera_chip.h"

FIXTURE(trace) {
	struct test_chip *c;
};

FIXTURE_SETUP(trace)
{
	self->c = chip_new("v4");
}

FIXTURE_TEARDOWN(trace)
{
	chip_free(self->c);
}

static const struct tsr_cmd_header nop = {
	.opcode = TSR_OP_NOP, .size_qw = 1,
};

/* The descriptor chip_queue_job() wrote last on queue 0. */
static struct tsr_job_desc *last_desc(struct test_chip *c)
{
	unsigned int slot = (c->tail[0] + RING_SIZE - 1) % RING_SIZE;

	return (struct tsr_job_desc *)host_ptr(c, RING_ADDR) + slot;
}

static uint32_t trace_bytes(unsigned int records)
{
	return sizeof(struct tsr_trace_header) +
	       records * sizeof(struct tsr_trace_record);
}

/* A DMA copy, a matmul, a VPU add, a NOP and a timestamp. */
struct five_engines {
	struct tsr_cmd_dma copy;
	struct tsr_cmd_matmul mm;
	struct tsr_cmd_vpu add;
	struct tsr_cmd_header nop;
	struct tsr_cmd_timestamp ts;
};

static struct five_engines five_engines(struct test_chip *c)
{
	uint64_t src = chip_buffer(c, 1, 4096), dst = chip_buffer(c, 1, 4096);
	uint64_t a = chip_buffer(c, 1, 64 * 64 * 4);
	uint64_t b = chip_buffer(c, 1, 64 * 64 * 4);
	uint64_t out = chip_buffer(c, 1, 64 * 64 * 4);
	uint64_t ts = chip_buffer(c, 1, 8);

	return (struct five_engines){
		.copy = {
			.hdr = HDR(TSR_OP_DMA_COPY, struct tsr_cmd_dma),
			.src = src, .dst = dst, .size = { 4096, 1, 1 },
		},
		.mm = {
			.hdr = HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
			.a = tensor(a, 64, 64, TSR_DTYPE_F32),
			.b = tensor(b, 64, 64, TSR_DTYPE_F32),
			.c = tensor(out, 64, 64, TSR_DTYPE_F32),
		},
		.add = {
			.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu),
			.op = TSR_VPU_ADD,
			.a = tensor(a, 64, 64, TSR_DTYPE_F32),
			.b = tensor(b, 64, 64, TSR_DTYPE_F32),
			.out = tensor(out, 64, 64, TSR_DTYPE_F32),
		},
		.nop = nop,
		.ts = {
			.hdr = HDR(TSR_OP_TIMESTAMP, struct tsr_cmd_timestamp),
			.va = ts,
		},
	};
}

TEST_F(trace, a_traced_job_has_a_record_per_command_on_the_modeled_clock)
{
	struct five_engines cmds = five_engines(self->c);
	uint64_t va = chip_buffer(self->c, 1, trace_bytes(5));
	const struct tsr_trace_header *h = host_ptr(self->c, va);
	const struct tsr_trace_record *r = (const void *)(h + 1);
	static const uint8_t ops[] = {
		TSR_OP_DMA_COPY, TSR_OP_MATMUL, TSR_OP_VPU, TSR_OP_NOP,
		TSR_OP_TIMESTAMP,
	};
	static const uint8_t engines[] = {
		TSR_ENGINE_DMA, TSR_ENGINE_MXU, TSR_ENGINE_VPU, TSR_ENGINE_CP,
		TSR_ENGINE_CP,
	};
	uint64_t busy[TSR_ENGINE_COUNT] = { 0 };
	struct tsr_completion *comp;
	unsigned int i;

	comp = chip_run_traced(self->c, &cmds, sizeof(cmds), va,
			       trace_bytes(5));
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_EQ(5, h->records);
	EXPECT_EQ(0, h->dropped);
	EXPECT_EQ(sizeof(struct tsr_trace_record), h->record_size);
	EXPECT_EQ(0, h->queue);
	EXPECT_EQ(comp->start_cycle, h->start_cycle);
	EXPECT_EQ(comp->end_cycle, h->end_cycle);
	EXPECT_LT(comp->start_cycle, r[0].start_cycle);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(i, r[i].index);
		EXPECT_EQ(ops[i], r[i].opcode);
		EXPECT_EQ(engines[i], r[i].engine);
		EXPECT_EQ(TSR_TRACE_NO_PORT, r[i].port);
		EXPECT_EQ(0, r[i].error);
		EXPECT_EQ(0, r[i].link_bytes);
		EXPECT_LT(r[i].start_cycle, r[i].end_cycle);
		/* One queue runs one command at a time, back to back. */
		if (i)
			EXPECT_EQ(r[i - 1].end_cycle, r[i].start_cycle);
		busy[r[i].engine] += r[i].end_cycle - r[i].start_cycle;
	}
	EXPECT_EQ(comp->end_cycle, r[4].end_cycle);
	EXPECT_EQ(comp->dma_cycles, busy[TSR_ENGINE_DMA]);
	EXPECT_EQ(comp->mxu_cycles, busy[TSR_ENGINE_MXU]);
	EXPECT_EQ(comp->vpu_cycles, busy[TSR_ENGINE_VPU]);
	/* The copy reads and writes its 4 KiB; a NOP moves nothing. */
	EXPECT_EQ(8192, r[0].mem_bytes);
	EXPECT_EQ(3 * 64 * 64 * 4, r[1].mem_bytes);
	EXPECT_EQ(0, r[3].mem_bytes);
	/* The timestamp command stored its own end. */
	EXPECT_EQ(r[4].end_cycle, *(uint64_t *)host_ptr(self->c, cmds.ts.va));
}

TEST_F(trace, a_full_buffer_counts_exactly_the_commands_it_dropped)
{
	struct tsr_cmd_header cmds[5] = { nop, nop, nop, nop, nop };
	uint64_t va = chip_buffer(self->c, 1, 4096);
	const struct tsr_trace_header *h = host_ptr(self->c, va);
	const struct tsr_trace_record *r = (const void *)(h + 1);
	struct tsr_completion *comp;

	/* Room for two records and a few bytes that fit no third. */
	memset(host_ptr(self->c, va), 0xa5, 4096);
	comp = chip_run_traced(self->c, cmds, sizeof(cmds), va,
			       trace_bytes(2) + 16);
	EXPECT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_EQ(2, h->records);
	EXPECT_EQ(3, h->dropped);
	EXPECT_EQ(1, r[1].index);
	/* Nothing beyond the second record was written. */
	EXPECT_EQ(0xa5, *(uint8_t *)&r[2]);
	EXPECT_EQ(comp->end_cycle, h->end_cycle);
}

TEST_F(trace, a_buffer_with_room_for_the_header_only_drops_every_command)
{
	struct tsr_cmd_header cmds[3] = { nop, nop, nop };
	uint64_t va = chip_buffer(self->c, 1, 4096);
	const struct tsr_trace_header *h = host_ptr(self->c, va);

	EXPECT_EQ(TSR_ERR_NONE, chip_run_traced(self->c, cmds, sizeof(cmds), va,
					   sizeof(*h))->error);
	EXPECT_EQ(0, h->records);
	EXPECT_EQ(3, h->dropped);
}

TEST_F(trace, a_failing_command_is_the_last_record_with_its_error)
{
	struct tsr_cmd_header cmds[3] = {
		nop, { .opcode = 0x7f, .size_qw = 1 }, nop,
	};
	uint64_t va = chip_buffer(self->c, 1, 4096);
	const struct tsr_trace_header *h = host_ptr(self->c, va);
	const struct tsr_trace_record *r = (const void *)(h + 1);
	struct tsr_completion *comp;

	comp = chip_run_traced(self->c, cmds, sizeof(cmds), va, 4096);
	EXPECT_EQ(TSR_ERR_BAD_OPCODE, comp->error);
	EXPECT_EQ(2, h->records);
	EXPECT_EQ(0, h->dropped);
	EXPECT_EQ(0, r[0].error);
	EXPECT_EQ(TSR_ERR_BAD_OPCODE, r[1].error);
	EXPECT_EQ(0x7f, r[1].opcode);
	EXPECT_EQ(comp->end_cycle, r[1].end_cycle);
}

/* A fill of @buf the job would run if its trace buffer let it start. */
static struct tsr_cmd_dma fill_cmd(uint64_t buf)
{
	return (struct tsr_cmd_dma){
		.hdr = HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma),
		.src = 0x5a5a5a5a, .dst = buf, .size = { 64, 1, 1 },
	};
}

TEST_F(trace, an_unmapped_trace_buffer_fails_the_job_before_its_first_command)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma fill = fill_cmd(buf);
	struct tsr_completion *comp;

	comp = chip_run_traced(self->c, &fill, sizeof(fill), 0x40000000, 4096);
	EXPECT_EQ(TSR_JOB_STATUS_ERROR, comp->status);
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, comp->error);
	EXPECT_EQ(TSR_NO_COMMAND, comp->failed_cmd);
	EXPECT_EQ(0x40000000, comp->fault_va);
	EXPECT_EQ(0, *(uint8_t *)host_ptr(self->c, buf));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, rd(self->c, TSR_REG_MMU_FAULT_REASON));
}

TEST_F(trace, a_trace_buffer_whose_last_page_is_unmapped_faults_there)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t va = 0x40000000;
	struct tsr_cmd_dma fill = fill_cmd(buf);
	struct tsr_completion *comp;

	chip_map(self->c, 1, va, buf, 4096, TSR_PTE_READ | TSR_PTE_WRITE);
	comp = chip_run_traced(self->c, &fill, sizeof(fill), va, 8192);
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, comp->error);
	EXPECT_EQ(va + 4096, comp->fault_va);
	EXPECT_EQ(0, *(uint8_t *)host_ptr(self->c, buf));
}

TEST_F(trace, a_read_only_trace_buffer_fails_with_a_permission_fault)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t ro = 0x20000000;
	struct tsr_completion *comp;

	chip_map(self->c, 1, ro, buf, 4096, TSR_PTE_READ);
	comp = chip_run_traced(self->c, &nop, sizeof(nop), ro, 4096);
	EXPECT_EQ(TSR_ERR_MMU_PERMISSION, comp->error);
	EXPECT_EQ(TSR_NO_COMMAND, comp->failed_cmd);
	EXPECT_EQ(ro, comp->fault_va);
}

TEST_F(trace, bad_trace_fields_fail_the_job_as_a_bad_descriptor)
{
	uint64_t va = chip_buffer(self->c, 1, 8192);
	const struct tsr_trace_header *h;
	const struct {
		uint32_t flags;
		uint64_t va;
		uint32_t size;
	} bad[] = {
		{ TSR_JOB_TRACE, va + 4, 4096 },	/* misaligned */
		{ TSR_JOB_TRACE, va, 4092 },	/* not a multiple of 8 */
		{ TSR_JOB_TRACE, va, sizeof(struct tsr_trace_header) - 8 },
		{ TSR_JOB_TRACE, va, TSR_TRACE_MAX_SIZE + 8 },
		{ 0, va, 0 },			/* a VA without the flag */
		{ 0, 0, 4096 },			/* a size without it */
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tsr_completion *comp;
		struct tsr_job_desc *d;

		comp = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 1);
		d = last_desc(self->c);
		d->flags |= bad[i].flags;
		d->trace_va = bad[i].va;
		d->trace_size = bad[i].size;
		tsr_core_queue_run(self->c->core, 0);
		EXPECT_EQ(TSR_ERR_BAD_JOB, comp->error) {
			TH_LOG("case %u", i);
		}
		EXPECT_EQ(TSR_NO_COMMAND, comp->failed_cmd);
	}
	/* Nothing was written to the would-be trace buffer. */
	h = host_ptr(self->c, va);
	EXPECT_EQ(0, h->record_size);
}

TEST_F(trace, an_untraced_job_has_the_same_timing_as_a_traced_one)
{
	struct five_engines cmds = five_engines(self->c);
	uint64_t va = chip_buffer(self->c, 1, trace_bytes(5));
	struct tsr_completion plain, traced;

	plain = *chip_run(self->c, &cmds, sizeof(cmds));
	traced = *chip_run_traced(self->c, &cmds, sizeof(cmds), va,
				  trace_bytes(5));
	EXPECT_EQ(plain.end_cycle - plain.start_cycle,
		  traced.end_cycle - traced.start_cycle);
	EXPECT_EQ(plain.dma_cycles, traced.dma_cycles);
	EXPECT_EQ(plain.mxu_cycles, traced.mxu_cycles);
}

TEST_F(trace, sparsecore_commands_are_traced_on_their_engine)
{
	uint64_t table = chip_buffer(self->c, 1, 4 * 8 * 4);
	uint64_t out = chip_buffer(self->c, 1, 2 * 8 * 4);
	uint64_t ids = chip_buffer(self->c, 1, 2 * 3 * 4);
	uint64_t va = chip_buffer(self->c, 1, trace_bytes(1));
	const struct tsr_trace_header *h = host_ptr(self->c, va);
	const struct tsr_trace_record *r = (const void *)(h + 1);
	static const uint32_t rows_cols[] = { 0, 1, 1, 0, 3, 3 };
	struct tsr_cmd_sc_gather g = {
		.hdr = HDR(TSR_OP_SC_GATHER, struct tsr_cmd_sc_gather),
		.count = 3, .combiner = TSR_SC_SUM,
		.in = { .row_ids = ids, .col_ids = ids + 12 },
		.table = tensor(table, 4, 8, TSR_DTYPE_F32),
		.out = tensor(out, 2, 8, TSR_DTYPE_F32),
	};
	struct tsr_completion *comp;

	memcpy(host_ptr(self->c, ids), rows_cols, sizeof(rows_cols));

	comp = chip_run_traced(self->c, &g, sizeof(g), va, trace_bytes(1));
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	ASSERT_EQ(1, h->records);
	EXPECT_EQ(TSR_OP_SC_GATHER, r[0].opcode);
	EXPECT_EQ(TSR_ENGINE_SC, r[0].engine);
	/* The ids, the output, and three 32-byte rows in 64-byte granules. */
	EXPECT_EQ(2 * 3 * 4 + 2 * 8 * 4 + 3 * 64, r[0].mem_bytes);
	EXPECT_EQ(rd(self->c, TSR_REG_CNT_SC_BUSY_LO),
		  r[0].end_cycle - r[0].start_cycle);
	EXPECT_EQ(0, comp->mxu_cycles + comp->vpu_cycles + comp->dma_cycles);
}

TEST_HARNESS_MAIN
