/*
 * glib_mainloop (control): an idle GLib main loop. main runs
 * g_main_loop_run with one timeout source an hour away (a daemon waiting
 * for its next event); GLib's worker threads, if any, wait for work.
 * Nothing is wrong, and hangdoc must not claim a deadlock.
 *
 * Prints "ready" once main sleeps in poll (g_main_context_iterate).
 *
 * main's stack (innermost first): poll ← g_main_context_poll /
 * g_main_context_iterate ← g_main_loop_run ← main.
 */
#include "patient.h"

#include <glib.h>

static gboolean hourly(gpointer data)
{
	(void)data;
	return G_SOURCE_CONTINUE;
}

static gboolean say_ready(gpointer data)
{
	/* An idle source runs once the loop is up; the test then waits for
	 * the poll (Settle). */
	(void)data;
	patient_ready();
	return G_SOURCE_REMOVE;
}

int main(void)
{
	GMainLoop *loop = g_main_loop_new(NULL, FALSE);
	g_timeout_add_seconds(3600, hourly, NULL);
	g_idle_add(say_ready, NULL);
	g_main_loop_run(loop); /* idle for ever */
	g_main_loop_unref(loop);
	return 0;
}
