package stacks

import "bytes"

func init() {
	registerFormat(&Format{
		Name:  "eu-stack",
		Sniff: sniffEUStack,
		Parse: ParseEUStack,
	})
}

// sniffEUStack counts eu-stack's lines in head: "PID N - process" (3),
// "TID N:" (2) and frames "#N  0xPC …" whose address is not followed by
// gdb's " in " (1).
func sniffEUStack(head []byte) int {
	score, frames := 0, 0
	for len(head) > 0 && frames < 40 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimLeft(bytes.TrimRight(line, "\r"), " \t>")
		switch {
		case bytes.HasPrefix(line, []byte("PID ")):
			if i := bytes.Index(line, []byte(" - ")); i > 4 && allDigits(string(line[4:i])) {
				score += 3
			}
		case bytes.HasPrefix(line, []byte("TID ")):
			if bytes.HasSuffix(line, []byte(":")) && allDigits(string(line[4:len(line)-1])) {
				score += 2
			}
		case len(line) > 2 && line[0] == '#' && isDigit(line[1]):
			i := 1
			for i < len(line) && isDigit(line[i]) {
				i++
			}
			rest := bytes.TrimLeft(line[i:], " ")
			if len(rest) == len(line[i:]) || !bytes.HasPrefix(rest, []byte("0x")) {
				continue
			}
			j := 2
			for j < len(rest) && isHex(rest[j]) {
				j++
			}
			if j == 2 || bytes.HasPrefix(rest[j:], []byte(" in ")) || j < len(rest) && rest[j] != ' ' || cdModuleTailRE.Match(rest) {
				continue // gdb's " in ", systemd-coredump's "(libc.so.6 + 0x…)"
			}
			score++
			frames++
		}
	}
	return score
}
