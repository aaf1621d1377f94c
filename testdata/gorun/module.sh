# Sourced by gen.sh and gen_delve.sh (as internal/patient's BuildGoWith
# does it): gomodule GORUN NAME DIR puts patient NAME of the folder GORUN
# in DIR as a module of its own (example.com/NAME, go 1.19), with the
# package the patients share (selfdump) beside it through a replace.
gomodule() {
	local gorun=$1 name=$2 dir=$3 shared=github.com/hangdoc/hangdoc/testdata/gorun/selfdump
	mkdir -p "$dir/selfdump"
	cp "$gorun/$name/main.go" "$dir/"
	cp "$gorun"/selfdump/*.go "$dir/selfdump/"
	printf 'module %s\n\ngo 1.19\n' "$shared" >"$dir/selfdump/go.mod"
	printf 'module example.com/%s\n\ngo 1.19\n\nrequire %s v0.0.0\n\nreplace %s => ./selfdump\n' "$name" "$shared" "$shared" >"$dir/go.mod"
}
