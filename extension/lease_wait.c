/*-------------------------------------------------------------------------
 *
 * lease_wait.c
 *		How a waiting lease.acquire() sleeps between two tries.
 *
 * The grant decision is always made in the table by lease_ops.c; this file
 * only decides when the next try happens.  A sleep ends at the earliest of:
 * the waiter's deadline, the expiry instant of the grant it waits for, and
 * pg_lease.poll_interval from now.  The latch wait lets query cancel,
 * statement_timeout and backend termination in at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_lease.h"

/*
 * lease_wait_until -- sleep until wake_at, at most one poll interval
 *
 * Returns early on any latch event (interrupts are processed here); the
 * caller re-tries in the table, so an early or spurious wake-up costs one
 * query and never breaks safety.
 */
void
lease_wait_until(const char *resource, TimestampTz wake_at)
{
	TimestampTz now = GetCurrentTimestamp();
	long		sleep_ms;

	if (wake_at <= now)
	{
		CHECK_FOR_INTERRUPTS();
		return;
	}

	/* round up, so a sleep never ends just before the instant it waits for */
	sleep_ms = (long) ((wake_at - now + 999) / 1000);
	if (sleep_ms > lease_poll_interval_ms)
		sleep_ms = lease_poll_interval_ms;

	(void) WaitLatch(MyLatch,
					 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms,
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * lease_waiter_count -- backends waiting for a resource; -1 when unknown
 *
 * Without the shared wait queue nobody counts waiters.
 */
int
lease_waiter_count(const char *resource)
{
	return -1;
}
