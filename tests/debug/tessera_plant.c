// SPDX-License-Identifier: GPL-2.0
/*
 * Bugs planted on purpose, to show that the debug guest kernel catches
 * them (make check-debug, the "planted" tests).  Loading the module with
 * bug=NAME commits that bug once, from the module's init:
 *
 *   use_after_free   reads a kmalloc'd object after kfree()     KASAN
 *   abba             takes two mutexes in both orders           lockdep
 *   sleep_in_atomic  allocates with GFP_KERNEL under a spinlock  might_sleep
 *   leak             drops the only pointer to an allocation    kmemleak
 *   out_of_bounds    indexes one past the end of an array       UBSAN
 *   irq_unsafe       takes with interrupts on a spinlock that   lockdep
 *                    a hard interrupt (an hrtimer) takes too
 *
 * It is built against the debug kernel only and never loaded otherwise.
 */
#include <linux/completion.h>
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

static char *bug = "";
module_param(bug, charp, 0444);
MODULE_PARM_DESC(bug,
		 "bug to commit: use_after_free, abba, sleep_in_atomic, leak, out_of_bounds or irq_unsafe");

static noinline int tessera_plant_use_after_free(void)
{
	u32 *obj = kmalloc(64, GFP_KERNEL);
	u32 val;

	if (!obj)
		return -ENOMEM;
	obj[0] = 1;
	kfree(obj);
	OPTIMIZER_HIDE_VAR(obj);
	val = READ_ONCE(obj[0]);
	pr_info("tessera_plant: read %u from a freed object\n", val);
	return 0;
}

static DEFINE_MUTEX(tessera_plant_a);
static DEFINE_MUTEX(tessera_plant_b);

/* One thread suffices: lockdep remembers a->b and objects to b->a. */
static noinline int tessera_plant_abba(void)
{
	mutex_lock(&tessera_plant_a);
	mutex_lock(&tessera_plant_b);
	mutex_unlock(&tessera_plant_b);
	mutex_unlock(&tessera_plant_a);

	mutex_lock(&tessera_plant_b);
	mutex_lock(&tessera_plant_a);
	mutex_unlock(&tessera_plant_a);
	mutex_unlock(&tessera_plant_b);
	return 0;
}

static DEFINE_SPINLOCK(tessera_plant_lock);

static noinline int tessera_plant_sleep_in_atomic(void)
{
	void *obj;

	spin_lock(&tessera_plant_lock);
	obj = kmalloc(64, GFP_KERNEL);
	spin_unlock(&tessera_plant_lock);
	kfree(obj);
	return 0;
}

static noinline int tessera_plant_leak(void)
{
	void *obj = kmalloc(128, GFP_KERNEL);

	if (!obj)
		return -ENOMEM;
	OPTIMIZER_HIDE_VAR(obj);
	return 0;
}

struct tessera_plant_array {
	int slot[4];
	int after;
};

/* The index lands on .after: UBSAN sees it, KASAN (same object) does not. */
static noinline int tessera_plant_out_of_bounds(void)
{
	struct tessera_plant_array *arr = kzalloc(sizeof(*arr), GFP_KERNEL);
	int index = ARRAY_SIZE(arr->slot);
	int val;

	if (!arr)
		return -ENOMEM;
	OPTIMIZER_HIDE_VAR(index);
	val = arr->slot[index];
	kfree(arr);
	pr_info("tessera_plant: read %d past the end of an array\n", val);
	return 0;
}

static DEFINE_SPINLOCK(tessera_plant_irq_lock);
static DECLARE_COMPLETION(tessera_plant_timer_done);

/* The innocent side: the lock taken in hard interrupt context. */
static enum hrtimer_restart tessera_plant_timer(struct hrtimer *timer)
{
	spin_lock(&tessera_plant_irq_lock);
	spin_unlock(&tessera_plant_irq_lock);
	complete(&tessera_plant_timer_done);
	return HRTIMER_NORESTART;
}

/*
 * The culprit takes the lock with interrupts on once the interrupt side has
 * been seen, so lockdep reports from here and its "state was registered at"
 * stack is the timer's: a report that must name this function, not that one.
 */
static noinline int tessera_plant_irq_unsafe(void)
{
	struct hrtimer timer;

	hrtimer_init_on_stack(&timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	timer.function = tessera_plant_timer;
	hrtimer_start(&timer, ms_to_ktime(1), HRTIMER_MODE_REL_HARD);
	wait_for_completion(&tessera_plant_timer_done);
	hrtimer_cancel(&timer);
	destroy_hrtimer_on_stack(&timer);

	spin_lock(&tessera_plant_irq_lock);
	spin_unlock(&tessera_plant_irq_lock);
	return 0;
}

static const struct {
	const char *name;
	int (*commit)(void);
} tessera_plant_bugs[] = {
	{ "use_after_free", tessera_plant_use_after_free },
	{ "abba", tessera_plant_abba },
	{ "sleep_in_atomic", tessera_plant_sleep_in_atomic },
	{ "leak", tessera_plant_leak },
	{ "out_of_bounds", tessera_plant_out_of_bounds },
	{ "irq_unsafe", tessera_plant_irq_unsafe },
};

static int __init tessera_plant_init(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(tessera_plant_bugs); i++) {
		if (!strcmp(bug, tessera_plant_bugs[i].name)) {
			pr_info("tessera_plant: committing %s\n", bug);
			return tessera_plant_bugs[i].commit();
		}
	}
	pr_err("tessera_plant: unknown bug '%s'\n", bug);
	return -EINVAL;
}
module_init(tessera_plant_init);

static void __exit tessera_plant_exit(void)
{
}
module_exit(tessera_plant_exit);

MODULE_DESCRIPTION("Bugs planted for the Tessera debug kernel's detectors");
MODULE_LICENSE("GPL");
