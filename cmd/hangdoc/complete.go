package main

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// completePids offers the pids of /proc for `hangdoc attach <TAB>`, each
// with its command name as the shell's description, the pids already
// typed left out.
func completePids(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self || slices.Contains(args, pid) || !strings.HasPrefix(pid, toComplete) {
			continue
		}
		comm, err := os.ReadFile("/proc/" + pid + "/comm")
		if err != nil {
			continue // gone already
		}
		out = append(out, pid+"\t"+strings.TrimSpace(string(comm)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
