package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

type signaturesOptions struct {
	format string
	rules  string
	id     string // explain this one signature or known issue
}

func newSignaturesCmd(ios *ioStreams) *cobra.Command {
	opts := &signaturesOptions{}
	cmd := &cobra.Command{
		Use:   "signatures [ID]",
		Short: "List the hang signatures and known issues hangdoc recognises",
		Long: `signatures lists every entry of hangdoc's catalogue (its stable id, what it
names, why it hangs, the fix) and every known-issue rule that refines one (the
ids it refines, what it matches, the upstream bug, the fix, links). With an
ID (a signature's or a known issue's, as a report names it), it explains that
one and the known issues that refine it. With --rules FILE, the rules of FILE
are checked and listed too, after the built-in ones; a rule of FILE with a
built-in rule's id replaces it (docs/rules.md has the schema).`,
		Example: `  hangdoc signatures                       # the whole catalogue
  hangdoc signatures lock-order-cycle      # what a verdict means and how to fix it
  hangdoc signatures --format json         # for tools: ids, titles, fixes, rules' matchers
  hangdoc signatures --rules myrules.json  # check your own rules file`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var ids []string
			for _, s := range heuristics.Catalogue {
				ids = append(ids, s.ID+"\t"+s.Title)
			}
			return ids, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.id = args[0]
			}
			return runSignatures(opts, ios)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "text", "output format: text or json")
	f.StringVar(&opts.rules, "rules", "", "a known-issue rules `FILE` (JSON, the schema of the built-in rules) to check and list")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// signatureEntry is one catalogue entry in `signatures --format json`.
type signatureEntry struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Explain string `json:"explain"`
	Fix     string `json:"fix"`
	Rank    int    `json:"rank"`
}

// knownIssueEntry is one known-issue rule in `signatures --format json`:
// the rule as a --rules file gives it (docs/rules.md), and its source.
type knownIssueEntry struct {
	heuristics.Rule
	Links  []string `json:"links"`
	Source string   `json:"source"`
}

func runSignatures(opts *signaturesOptions, ios *ioStreams) error {
	if opts.format != "text" && opts.format != "json" {
		return usageError{fmt.Errorf("--format %q: want text or json", opts.format)}
	}
	var user []heuristics.Rule
	if opts.rules != "" {
		var err error
		if user, err = heuristics.LoadRulesFile(opts.rules); err != nil {
			return usageError{fmt.Errorf("--rules: %v", flatText(err.Error()))}
		}
	}
	rules := heuristics.RulesInForce(user)
	sigs := append([]*heuristics.Signature(nil), heuristics.Catalogue...)
	sort.SliceStable(sigs, func(i, j int) bool { return sigs[i].Rank < sigs[j].Rank })

	var doc struct {
		Schema      string            `json:"schema"`
		Signatures  []signatureEntry  `json:"signatures"`
		KnownIssues []knownIssueEntry `json:"known_issues"`
	}
	doc.Schema = stacks.Schema
	doc.Signatures, doc.KnownIssues = []signatureEntry{}, []knownIssueEntry{}
	for _, s := range sigs {
		doc.Signatures = append(doc.Signatures, signatureEntry{ID: s.ID, Title: s.Title, Explain: flatText(s.Explain), Fix: flatText(s.Fix), Rank: s.Rank})
	}
	for _, r := range rules {
		links := r.Links
		if links == nil {
			links = []string{}
		}
		doc.KnownIssues = append(doc.KnownIssues, knownIssueEntry{Rule: r, Links: links, Source: r.Source})
	}
	if opts.id != "" {
		if err := onlyID(opts.id, &doc.Signatures, &doc.KnownIssues); err != nil {
			return err
		}
	}
	if opts.format == "json" {
		enc := json.NewEncoder(ios.out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return writeSignaturesText(ios.out, doc.Signatures, doc.KnownIssues)
}

// onlyID keeps the signature id names and the known issues that refine
// it, or the known issue id names and the signatures it refines.
func onlyID(id string, sigs *[]signatureEntry, rules *[]knownIssueEntry) error {
	var keepSigs []signatureEntry
	var keepRules []knownIssueEntry
	for _, s := range *sigs {
		if s.ID == id {
			keepSigs = append(keepSigs, s)
		}
	}
	for _, r := range *rules {
		if r.ID == id || len(keepSigs) > 0 && slices.Contains(r.Base, id) {
			keepRules = append(keepRules, r)
		}
	}
	if len(keepSigs) == 0 && len(keepRules) == 0 {
		return usageError{fmt.Errorf("%q is no signature or known issue (`hangdoc signatures` lists them)", id)}
	}
	if len(keepSigs) == 0 {
		for _, s := range *sigs {
			if slices.Contains(keepRules[0].Base, s.ID) {
				keepSigs = append(keepSigs, s)
			}
		}
	}
	*sigs, *rules = keepSigs, keepRules
	return nil
}

func writeSignaturesText(w io.Writer, sigs []signatureEntry, rules []knownIssueEntry) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Signatures (%d), most specific first:\n", len(sigs))
	for _, s := range sigs {
		fmt.Fprintf(&b, "\n%s\n", s.ID)
		wrapSignatureText(&b, "  ", s.Title+".")
		wrapSignatureText(&b, "  ", s.Explain)
		wrapSignatureText(&b, "  fix: ", s.Fix)
	}
	fmt.Fprintf(&b, "\nKnown issues (%d), tried in this order:\n", len(rules))
	for _, r := range rules {
		fmt.Fprintf(&b, "\n%s\n", r.ID)
		wrapSignatureText(&b, "  ", r.Title+".")
		wrapSignatureText(&b, "  refines: ", strings.Join(r.Base, ", "))

		if r.Source != "" && r.Source != "built-in" {
			fmt.Fprintf(&b, "  from %s\n", report.Sanitize(r.Source))
		}
		wrapSignatureText(&b, "  fix: ", r.Fix)
		for _, l := range r.Links {
			fmt.Fprintf(&b, "  %s\n", report.Sanitize(l))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flatText joins a hard-wrapped paragraph (or an error) into one line.
func flatText(s string) string { return strings.Join(strings.Fields(s), " ") }

// wrapSignatureText writes text wrapped at 80 columns, the first line
// after prefix and the others indented like it. Rules from a file are
// untrusted: everything goes through report.Sanitize.
func wrapSignatureText(b *strings.Builder, prefix, text string) {
	const width = 80
	indent := strings.Repeat(" ", len(prefix))
	line := prefix
	empty := true
	for _, word := range strings.Fields(report.Sanitize(text)) {
		if !empty && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	if !empty {
		b.WriteString(line + "\n")
	}
}
