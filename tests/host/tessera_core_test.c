// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the Tessera chip core (qemu-device/core), driven
 * through its narrow interface with a recording host in place of QEMU.
 */
#include <stdint.h>
#include <string.h>

#include "kselftest_harness.h"

#include "drm/tessera_chip.h"
#include "tessera-core.h"

#define MAX_IRQS 16

struct fake_host {
	unsigned int irqs[MAX_IRQS];
	unsigned int nr_irqs;
	unsigned int schedules;
};

static void fake_raise_irq(void *opaque, unsigned int vector)
{
	struct fake_host *h = opaque;

	if (h->nr_irqs < MAX_IRQS)
		h->irqs[h->nr_irqs] = vector;
	h->nr_irqs++;
}

static void fake_schedule(void *opaque)
{
	struct fake_host *h = opaque;

	h->schedules++;
}

static const TsrCoreOps fake_ops = {
	.raise_irq = fake_raise_irq,
	.schedule = fake_schedule,
};

FIXTURE(core) {
	TsrCore core;
	struct fake_host host;
};

FIXTURE_SETUP(core)
{
	memset(&self->host, 0, sizeof(self->host));
	tsr_core_init(&self->core, &fake_ops, &self->host);
}

FIXTURE_TEARDOWN(core)
{
}

TEST_F(core, identity_registers_read_their_documented_values)
{
	EXPECT_EQ(TSR_CHIP_ID, tsr_core_reg_read(&self->core, TSR_REG_CHIP_ID));
	EXPECT_EQ(TSR_VERSION(TSR_DEVICE_VERSION_MAJOR, TSR_DEVICE_VERSION_MINOR),
		  tsr_core_reg_read(&self->core, TSR_REG_DEVICE_VERSION));
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_CAPS));
}

TEST_F(core, identity_registers_ignore_writes)
{
	tsr_core_reg_write(&self->core, TSR_REG_CHIP_ID, 0xdeadbeef);
	tsr_core_reg_write(&self->core, TSR_REG_DEVICE_VERSION, 0xdeadbeef);
	EXPECT_EQ(TSR_CHIP_ID, tsr_core_reg_read(&self->core, TSR_REG_CHIP_ID));
	EXPECT_EQ(TSR_VERSION(TSR_DEVICE_VERSION_MAJOR, TSR_DEVICE_VERSION_MINOR),
		  tsr_core_reg_read(&self->core, TSR_REG_DEVICE_VERSION));
}

TEST_F(core, scratch_holds_what_was_written)
{
	static const uint32_t values[] = { 0, 1, 0x5a5aa5a5, 0xffffffff };
	unsigned int i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		tsr_core_reg_write(&self->core, TSR_REG_SCRATCH, values[i]);
		EXPECT_EQ(values[i],
			  tsr_core_reg_read(&self->core, TSR_REG_SCRATCH));
	}
}

TEST_F(core, reserved_offsets_read_zero_and_ignore_writes)
{
	static const uint32_t offsets[] = {
		0x0010, 0x0ffc, TSR_BLOCK_QUEUE, TSR_BLOCK_MMU,
		TSR_BLOCK_DEBUG, TSR_BLOCK_ICI, TSR_BAR0_REGS_SIZE - 4,
	};
	unsigned int i;

	for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		tsr_core_reg_write(&self->core, offsets[i], 0xffffffff);
		EXPECT_EQ(0, tsr_core_reg_read(&self->core, offsets[i]));
	}
	EXPECT_EQ(0, self->host.nr_irqs);
	EXPECT_EQ(0, self->host.schedules);
}

TEST_F(core, ping_is_acknowledged_after_the_write_returns)
{
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 0x1234abcd);

	/* Nothing happens inside the register write itself. */
	EXPECT_EQ(1, self->host.schedules);
	EXPECT_EQ(0, self->host.nr_irqs);
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_PING_ACK));

	tsr_core_run(&self->core);
	ASSERT_EQ(1, self->host.nr_irqs);
	EXPECT_EQ(TSR_MSIX_VEC_DEVICE, self->host.irqs[0]);
	EXPECT_EQ(0x1234abcd, tsr_core_reg_read(&self->core, TSR_REG_PING_ACK));
	EXPECT_EQ(1, tsr_core_reg_read(&self->core, TSR_REG_PING_COUNT));
	EXPECT_EQ(TSR_IRQ_PING,
		  tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));
}

TEST_F(core, run_without_pending_work_raises_nothing)
{
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	tsr_core_run(&self->core);
	EXPECT_EQ(0, self->host.nr_irqs);
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_PING_COUNT));
}

TEST_F(core, disabled_ping_latches_status_and_is_delivered_on_enable)
{
	tsr_core_reg_write(&self->core, TSR_REG_PING, 7);
	tsr_core_run(&self->core);
	EXPECT_EQ(0, self->host.nr_irqs);
	EXPECT_EQ(TSR_IRQ_PING,
		  tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));

	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	ASSERT_EQ(1, self->host.nr_irqs);
	EXPECT_EQ(TSR_MSIX_VEC_DEVICE, self->host.irqs[0]);
}

TEST_F(core, irq_status_is_write_one_to_clear)
{
	tsr_core_reg_write(&self->core, TSR_REG_PING, 1);
	tsr_core_run(&self->core);
	ASSERT_EQ(TSR_IRQ_PING,
		  tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));

	tsr_core_reg_write(&self->core, TSR_REG_IRQ_STATUS, 0);
	EXPECT_EQ(TSR_IRQ_PING,
		  tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_STATUS, TSR_IRQ_PING);
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));
}

TEST_F(core, irq_enable_keeps_only_defined_bits)
{
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, 0xffffffff);
	EXPECT_EQ(TSR_IRQ_ALL,
		  tsr_core_reg_read(&self->core, TSR_REG_IRQ_ENABLE));
}

TEST_F(core, pings_count_and_the_last_cookie_wins)
{
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 10);
	tsr_core_run(&self->core);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 11);
	tsr_core_run(&self->core);
	EXPECT_EQ(2, self->host.nr_irqs);
	EXPECT_EQ(11, tsr_core_reg_read(&self->core, TSR_REG_PING_ACK));
	EXPECT_EQ(2, tsr_core_reg_read(&self->core, TSR_REG_PING_COUNT));
}

TEST_F(core, pings_written_before_the_chip_runs_coalesce)
{
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 20);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 21);
	tsr_core_run(&self->core);
	EXPECT_EQ(1, self->host.nr_irqs);
	EXPECT_EQ(21, tsr_core_reg_read(&self->core, TSR_REG_PING_ACK));
	EXPECT_EQ(1, tsr_core_reg_read(&self->core, TSR_REG_PING_COUNT));
}

TEST_F(core, reset_returns_every_register_to_its_reset_value)
{
	tsr_core_reg_write(&self->core, TSR_REG_SCRATCH, 0x55);
	tsr_core_reg_write(&self->core, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	tsr_core_reg_write(&self->core, TSR_REG_PING, 99);
	tsr_core_run(&self->core);
	/* A ping written just before reset must not survive it. */
	tsr_core_reg_write(&self->core, TSR_REG_PING, 100);

	tsr_core_reset(&self->core);
	self->host.nr_irqs = 0;
	tsr_core_run(&self->core);

	EXPECT_EQ(0, self->host.nr_irqs);
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_SCRATCH));
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_IRQ_ENABLE));
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_IRQ_STATUS));
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_PING_ACK));
	EXPECT_EQ(0, tsr_core_reg_read(&self->core, TSR_REG_PING_COUNT));
	EXPECT_EQ(TSR_CHIP_ID, tsr_core_reg_read(&self->core, TSR_REG_CHIP_ID));
}

TEST_HARNESS_MAIN
