package shell

// Differential tests: the same script runs in iovfs sh (on an iovfs tmpfs)
// and in the host's bash with GNU coreutils (on a private host tmpfs), and
// the standard output, standard error and exit status must match. Both
// run in the C locale and UTC; the scripts set the times they print.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// coreutilsCases are scripts whose every line of output both shells must
// agree on. Each runs in an empty directory that is the root of a tmpfs.
var coreutilsCases = []struct{ name, script string }{
	{"cat", `printf 'a\nb\n' > f; cat f f; cat nope; echo $?; cat f nope f; echo $?; mkdir d; cat d; echo $?`},
	{"cat-stdin-dash", `printf 'x\n' > f; printf 'in\n' | cat f - f`},
	{"echo-printf", `echo a b; echo -n c; echo; printf '%s-%d\n' x 3 y 4; printf '%5s|%-3s|\n' ab c`},
	{"ls-plain", `touch b a .h; mkdir d; ls; ls -a; ls -A; ls -1 d a; ls nope; echo $?; ls -d d; ls -z; echo $?`},
	{"ls-long", `touch -d '2024-01-02 03:04:05' a; printf 12345 > b; chmod 4755 b; touch -d '2024-02-03 04:05:06' b; mkdir d; touch -d '2024-03-04 05:06:07' d; ls -l a b d; ls -ld d; ls -lh b; head -c 5000 /dev/zero > big; touch -d '2001-01-01 00:00:00' big; ls -lh big; ls -l big`},
	{"ls-recursive", `mkdir -p x/y/z; touch x/f x/y/g; ls -R x; ls -R1 x/y`},
	{"mkdir-rmdir", `mkdir a; mkdir a; echo $?; mkdir -p a/b/c; echo $?; mkdir -m 700 m; touch -d '2024-01-01 00:00:00' m; ls -ld m; rmdir a; echo $?; rmdir nope; echo $?; rmdir -p a/b/c; echo $?; ls`},
	{"rm", `touch f; mkdir d; rm nope; echo $?; rm -f nope; echo $?; rm d; echo $?; mkdir -p d/e; touch d/e/f; rm -r d; echo $?; rm f; ls; rm; echo $?`},
	{"cp-mv", `printf 'data\n' > f; cp f g; cat g; mkdir d; cp f g d; ls d; cp d e; echo $?; cp -r d e; ls e; cp nope x; echo $?; mv g h; ls; mv h d/; ls d; mv nope x; echo $?; cp f; echo $?`},
	{"ln-readlink", `touch f; ln -s f l; readlink l; ln -s f l; echo $?; ln -sf g l; readlink l; ln f h; ls; ln nope x; echo $?; readlink f; echo $?; mkdir -p a/b; ln -s ../f a/b/s; readlink -f a/b/s > r; readlink -f f > q; test "$(cat r)" = "$(cat q)" && echo same`},
	{"touch", `touch -d '2020-05-06 07:08:09' f; touch -d '2021-05-06 07:08:09' g h; ls -l f g h; touch nope/x; echo $?; touch -d bogus f; echo $?`},
	{"truncate", `truncate -s 100 f; wc -c < f; truncate -s +50 f; wc -c f; truncate -s -140 f; wc -c f; truncate -s 1K f; wc -c f; truncate f; echo $?`},
	{"head-tail", `seq() { i=1; while [ $i -le $1 ]; do echo $i; i=$((i+1)); done; }; seq 30 > f; head f; head -n 3 f; head -c 5 f; tail -n 3 f; tail -c 6 f; tail -n +28 f; head -n 2 f f; head -3 f; tail -2 f`},
	{"wc", `printf 'a b\nc\n' > f; printf 'xx yy zz\n' > g; wc f; wc -l f; wc -w f g; wc -c g f; wc nope; echo $?`},
	{"hexdump-xxd", `printf 'hello, world\n0123456789abcdefghij' > f; hexdump -C f; xxd f; head -c 64 /dev/zero > z; hexdump -C z; printf '' > e; hexdump -C e; xxd e`},
	{"dd", `printf 'abcdefghijklmnopqrstuvwxyz' > f; dd if=f of=g bs=4 count=3 skip=1 status=none; cat g; echo; dd if=f of=g bs=5 seek=1 conv=notrunc status=none; cat g; echo; dd if=f of=h ibs=3 obs=7 count=4 2>&1 | head -2; cat h; echo; dd if=f of=s bs=10 conv=sync status=none; wc -c s; dd if=nope of=x; echo $?; dd bogus=1; echo $?`},
	{"chmod-chown", `touch -d '2024-01-01 00:00:00' f; chmod 600 f; ls -l f; chmod u+x,g+r f; ls -l f; chmod a-r f; ls -l f; chmod o=rw f; ls -l f; chmod 999 f; echo $?; chmod 644 nope; echo $?; chmod g+s,+t f; ls -l f; chown 12:34 f; chown nosuchuser f; echo $?`},
	{"find", `mkdir -p a/b/c; touch a/x.txt a/b/y.txt a/b/c/z.go; find a -name '*.go'; find a/b -type d -name c; find a/b/c -maxdepth 0; find a -type f -name 'z*'; find nope; echo $?`},
	{"du", `mkdir -p a/b; head -c 10000 /dev/zero > a/f; head -c 5000 /dev/zero > a/b/g; du a; du -s a; du -sh a; ln a/f a/h; du -s a`},
	{"mkfifo", `mkfifo p; touch -d '2024-01-01 00:00:00' p; ls -l p; mkfifo p; echo $?`},
	{"status-codes", `true; echo $?; false; echo $?; ls nope 2>/dev/null; echo $?; ! true; echo $?; if cat nope 2>/dev/null; then echo yes; else echo no $?; fi`},
	{"redirections", "echo one > f; echo two >> f; cat < f; cat f 2>&1 >/dev/null; cat nope 2> e; cat e; { echo a; echo b >&2; } > o 2>&1; cat o; cat <<EOF\nhere $((1+2))\nEOF\n"},
	{"pipelines", `printf 'b\na\nc\n' > f; cat f | head -n 2 | tail -n 1; cat f | wc -l; ls | cat; false | true; echo $?; true | false; echo $?; cat nope | wc -c; echo $?; head -c 100000 /dev/zero | cat | cat | wc -c; cat f | while read l; do echo "[$l]"; done; x=$(cat f | head -n 1); echo $x; echo a |& cat; ls nope |& cat; cat /dev/zero | head -c 3 | xxd`},
	{"stat", `printf 12345 > f; mkdir d; ln -s f l; mkfifo p; chmod 4751 f; stat f > o; head -n 2 o; head -n 4 o | tail -n 1; stat -L l | head -n 1; stat l | head -n 2; stat p | head -n 2; stat nope; echo $?`},
	{"head-tail-negative", `i=1; while [ $i -le 8 ]; do echo $i; i=$((i+1)); done > f; head -n -3 f; head -c -4 f; echo; tail -n 0 f; head -n 0 f; head -n x f; echo $?`},
	{"seq", `seq 3; seq 2 4; seq 1 3 10; seq 10 -3 1; seq 5 1; seq -- -2 0; seq 1.5 3; seq 0 0.25 1; seq 1 .5 2; seq 0.1 0.1 0.3; seq 1e2 1e2; seq -w 8 10; seq -w -- -3 1; seq -s, 3; seq -s ' : ' 1 2; seq -f '%03g' 3; seq -f 'x%.2fy' 1 2; seq -f '%g' 1000000 1000001; seq x; echo $?; seq 1 0 3; echo $?; seq; echo $?; seq 1 2 3 4; echo $?; seq -f %d 1; echo $?; seq -f '%g %g' 1; echo $?`},
	{"sort", `printf 'b 2\na 10\nc 1\na 10\n' > f; sort f; sort -r f; sort -k2 f; sort -k2n f; sort -n -k2 f; sort -k2,2n -r f; sort -u f; sort -t: -k2,2 <<< $'x:b\ny:a\nz:a'; printf '10\n9\n-1\n1e3\nabc\n 5\n-0\n0\n1.5\n1.50\n' > n; sort -n n; sort -rn n; sort -nu n; printf 'b\na' | sort; sort -o out f; cat out; sort -o f f; cat f; printf 'a b\na a\n' | sort -s -k1,1; printf 'a b\na a\n' | sort -k1,1; printf 'x  3\nx 2\ny 1\n' | sort -k2; printf 'x  3\nx 2\ny 1\n' | sort -b -k2; printf 'ab.c\naa.d\n' | sort -k1.2,1.2; printf 'B\na\nA\nb\n' | sort -f; printf 'B\na\nA\nb\n' | sort; printf '1\n01\n001\n' | sort -nu; sort -t: -k2 -k1,1r <<< $'b:1\na:1\nc:0'; sort nope; echo $?; sort -k0 f; echo $?; sort -k 1.0 f; echo $?; sort -k x f; echo $?; sort -t ab f; echo $?; sort --bogus; echo $?`},
	{"uniq", `printf 'a\na\nb\nc\nc\nc\na\n' > f; uniq f; uniq -c f; uniq -d f; uniq -u f; uniq -cd f; uniq -du f; printf 'x\nx' | uniq -c; uniq f o; cat o; uniq nope; echo $?; uniq a b c; echo $?; sort f | uniq -c`},
	{"cut", `printf 'a:b:c\nnodelim\none:two\n' > g; cut -d: -f2 g; cut -d: -f2 -s g; cut -d: -f1,3- g; cut -d: -f-2 g; cut -d: -f 2,1 g; cut -d: --complement -f2 g; cut -d: -f1,3 --output-delimiter=XX g; cut -c2-3 g; cut -c-2,4 g; cut -b1 g; cut -c3- g; printf 'a\tb\tc\n' | cut -f2; printf 'abc' | cut -c2; cut g; echo $?; cut -d ab -f1 g; echo $?; cut -s -c1 g; echo $?; cut -f0 g; echo $?; cut -f3-2 g; echo $?; cut -f x g; echo $?; cut -c x g; echo $?; cut -c 0 g; echo $?; cut -f - g; echo $?; cut -f1 nope; echo $?; cut -c1 -f1 g; echo $?; cut -d: -c1 g; echo $?`},
	{"tr", `echo 'hello world' | tr a-z A-Z; echo hello | tr -d l; echo 'aabbcc  dd' | tr -s 'a-c '; echo abc123 | tr -c a-z X; echo abc123 | tr -cd '[:digit:]'; echo; echo a:b | tr : '\n'; echo hello | tr -s l x; echo abc | tr abc x; echo abc | tr '[:lower:]' '[:upper:]'; echo ABC | tr '[:upper:]' '[:lower:]'; echo abcd | tr a-d '[x*]'; echo abc | tr ab '[x*2]Y'; echo abcdef | tr a-f 'xy[z*]w'; echo 'a\b' | tr '\\' /; echo abc | tr -ds a b; echo aabb | tr -s '[:alpha:]'; echo abc | tr -c a '\n'; echo 'a1 b2' | tr '[:alnum:]' '[*]'; echo 'tab	x' | tr '\t' '\101'; echo abc | tr -t abc xy; echo 'a  b' | tr -s '[:space:]' ' '; tr; echo $?; tr a; echo $?; tr -d; echo $?; tr -d a b; echo $?; echo abc | tr z-a x; echo $?; echo abc | tr a '[:upper:]'; echo $?; echo abc | tr '[:foo:]' x; echo $?; echo abc | tr a '[:digit:]'; echo $?; echo abc | tr a ''; echo $?`},
	{"tee", `echo hi | tee t1 t2; cat t1 t2; echo x | tee -a t1 >/dev/null; cat t1; echo y | tee nope/x t3; echo $?; cat t3; printf 'abc' | tee | wc -c; head -c 200000 /dev/zero | tee big | wc -c; wc -c big`},
	{"basename-dirname", `basename /a/b/; basename a.txt .txt; basename -a x/y z/w; basename -s .c a.c b.c; basename /; basename ''; basename .txt .txt; basename //; basename a/b.c .c; basename -z a/b | wc -c; dirname -z a/b | wc -c; basename; echo $?; basename a b c; echo $?; dirname /a/b/ c d/; dirname /; dirname ''; dirname //a//b//; dirname a; dirname /a; dirname; echo $?`},
	{"stat-birth", `: > f; b=$(stat -c %W f); [ "$b" -gt 1600000000 ] && echo birth; [ "$b" = "$(stat -c %W f)" ] && echo stable; stat f | tail -n 1 | grep -c '^ Birth: 20'; stat -c %w f | grep -c '^20'`},
	{"stat-format", `printf 12345 > f; : > e; mkdir d; ln -s f l; mkfifo p; chmod 4751 f; touch -d '2024-01-02 03:04:05.123456789' f; for x in f e d l p /dev/null; do stat -c '%n|%s|%F|%a|%A|%h|%u|%g|%U|%G|%N' $x; done; stat -c '%y|%Y|%x|%X|%.3Y|%.9Y|%.Y' f; stat -c '%b|%B|%o' f e > /dev/null; echo $?; stat --format='%5s|%-5s|%05a|%.3s|%q|%%|%' f; stat -L -c '%N %F' l; stat -c '%t,%T' /dev/null; stat --printf '%n\t%s\n\x41\101\\' f; echo; stat -c '%s' f nope e; echo $?; stat -c; echo $?; [ "$(stat -c %i f)" = "$(ls -i f | cut -d' ' -f1)" ] && echo inode; [ "$(stat -c %h d)" = 2 ] && echo links; [ "$(stat -c %Z f)" -ge "$(stat -c %Y e)" ] && echo ctime`},
	{"xxd-options", `printf 'hello, world\n0123456789abcdefghij' > f; xxd -l 5 f; xxd -s 3 -l 8 f; xxd -c 8 f; xxd -g 1 -l 8 f; xxd -g 4 f; xxd -g 3 -l 8 f; xxd -g 0 -l 4 f; xxd -c 5 -g 2 f; xxd -p f; xxd -ps -c 4 f | head -2; xxd -p f | xxd -r -p; echo; xxd f | xxd -r; echo; xxd -c 8 f | xxd -r -c 8 | wc -c; xxd -s -4 f; xxd -s 40 f; echo $?; xxd -l 0 f; echo $?; xxd -l16 f; xxd -len 3 f; xxd -u -l 4 f; xxd -l 0x10 -s 010 f; xxd f out; cat out | head -1; printf 'abc' | xxd; printf 'abc' | xxd -s 1; head -c 100000 /dev/zero | xxd -p | wc -c; xxd -l x f; echo $?; xxd nope; echo $?; xxd -z f >/dev/null 2>&1; echo $?; printf '00000010: 4142\n' | xxd -r > g; wc -c g; xxd g | tail -1`},
	{"hexdump-options", `printf 'hello, world\n0123456789abcdefghij' > f; hexdump f; hexdump -n 5 -C f; hexdump -s 3 -n 20 -C f; hexdump -s 100 -C f; hexdump -n 3 f; head -c 40 /dev/zero | hexdump; head -c 40 /dev/zero | hexdump -v -C; hexdump -C -s 0x10 f; hexdump -C -s 1k f; hexdump -C -n 1K /dev/zero; hexdump -C -n 2KiB /dev/zero; hexdump -n x f; echo $?; hexdump -s x f; echo $?; hexdump -C -n 1b f; echo $?; hexdump -C nope; echo $?; hexdump -z; echo $?`},
	{"grep", `printf 'foo bar\nFoo\nbaz foo-x\nfood\n' > a; printf 'nothing\n' > b; mkdir -p d/e; printf 'foo\n' > d/e/x; grep foo a; grep -c foo a b; grep -l foo a b; grep -L foo a b; grep -n -i foo a; grep -w foo a; grep -o 'fo*' a; grep -v foo a; grep -q foo a; echo $?; grep zz a; echo $?; grep foo nope; echo $?; grep -s foo nope; echo $?; grep foo d; echo $?; grep -r foo d; grep -E 'ba(r|z)' a; grep 'ba\(r\|z\)' a; grep -F 'o-x' a; grep -F 'o.x' a; echo $?; grep -e foo -e baz a; grep 'a\{2\}' a; echo $?; grep -E 'o{2}' a; grep -ow foo a; grep -c zz a; grep -nH foo a; grep -h foo a b; grep -x Foo a; grep -Fx food a; grep -iw FOO a; grep -on 'o' a | head -3; grep 'f.o' a; grep '^b' a; grep 'x$' a; grep 'a*' b; grep '*' a; echo $?; grep 'o\+' b; grep -E 'fo+d|^F' a; grep '[[:upper:]]' a; grep '[^a-z ]' a; grep '\<foo\>' a; grep -vc foo a; printf 'x\ny\n' | grep -n y; printf 'x\ny\n' | grep -H y; grep foo - < a | head -1; grep; echo $?; grep -E '(' a; echo $?; grep '\(' a; echo $?; grep -E 'a{1' a; echo $?; grep 'a\' a; echo $?; grep -E 'x\' a; echo $?; echo 'x\\' | grep -c 'x\\\\'; cd d; grep -r foo; cd ..; grep -r foo . | sort; printf 'a\0b\n' > bin; grep a bin; echo $?; grep -c a bin; grep -q foo nope a; echo $?; grep foo nope a; echo $?`},
	{"xargs", `printf 'a b\nc "d e" f\\ g\n' | xargs; printf 'a b c d e\n' | xargs -n 2; printf 'a b c\n' | xargs -n 2 echo x; printf 'a\0b c\0' | xargs -0 -n1 echo x; printf 'a:b c:d' | xargs -d : -n1; printf 'one\n  two three\n' | xargs -I{} echo [{}] {}; echo -n | xargs echo hi; echo -n | xargs -r echo hi; echo "a 'b" | xargs; echo $?; echo 'a "b' | xargs; echo $?; echo a | xargs false; echo $?; echo a | xargs nosuch; echo $?; echo a | xargs -n 0; echo $?; echo a | xargs -n x; echo $?; echo a b | xargs -t echo; echo a | xargs -I; echo $?; echo a b | xargs -n1 -I X echo X; printf 'x\n' | xargs cat; echo $?; printf 'f1\nf2\n' | xargs touch; ls f1 f2; printf 'f1 f2' | xargs rm; ls f1 2>&1; printf 'q\n' | xargs -I % echo %; echo $?; echo '-n x' | xargs echo; echo a | xargs echo -e 'x\ty'`},
	{"sed", `printf 'one\ntwo\nthree\nfour\nfive\n' > s; sed 's/o/0/' s; sed -n '2,4p' s; sed '2d;4q' s; sed -n '/t/p' s; sed 's/o/0/2g' <<< oooo; sed 's/o/0/2' <<< oooo; sed -E 's/(t)(w|h)/\2\1/' s; sed 's/\(t\)\(w\|h\)/\2\1/' s; sed 'y/abc/xyz/' <<< aabbcc; sed -n '$p' s; sed '2!d' s; sed -n '/two/,/four/p' s; sed -n '/two/,+1p' s; sed -n '3,1p' s; sed -n '0~2p' s; sed -n '2,~4p' s; sed -n '$!p' s | wc -l; sed '3q5' s; echo $?; sed -n '2{p;p}' s; sed = s | head -4; sed -e 1d -e 3d s; sed -n -e '/e/{' -e 's/e/E/gp' -e '}' s; sed 's/x*/-/g' <<< abc; sed 's/b*/-/g' <<< abc; sed 's/[0-9]\+/N/' <<< ab12c; sed 's/o/\n/' <<< foo; sed 's/.*/[&]/' <<< hi; sed 's/h/\&/' <<< hi; sed 's|/|:|g' <<< /a/b; sed 's/O/x/I' <<< foo; sed 's/o/x/gp' <<< foo; sed -n 's/o/x/p' s; sed '/x/,/y/d' s | wc -l; sed '/one/s//1/' s | head -1; printf 'a\nb' | sed 's/b/c/' | wc -c; sed n s; sed -n 'n;p' s; sed '$d' s; sed '/^t/d' s; sed 2q s nope; echo $?; cp s s2; sed -i 's/one/ONE/' s2; head -1 s2; sed -i.bak 2d s2; ls s2*; head -2 s2 s2.bak; sed -n p s s | wc -l; sed -s -n '$p' s s; sed -n '$p' s s; sed k s; echo $?; sed 's/a/b' s; echo $?; sed 's/a/b/z' s; echo $?; sed 'y/ab/c/' s; echo $?; sed nope s; echo $?; sed '}' s; echo $?; sed '{p' s; echo $?; sed 's/\(a\)/\2/' s; echo $?; sed p nope; echo $?; sed -i p; echo $?`},
	{"sed-text", "printf 'one\\ntwo\\nthree\\n' > s; sed '2a\\  added' s; sed '2a   added2' s; sed '/two/i before' s; sed '$a end' s; sed '2c changed' s; sed '1,2c gone' s; sed -e '1a\\' -e 'multi' s; sed '1a x\\\ny' s; sed -n '2{p;a z\n}' s; printf 'a\\nb' | sed '$a tail'; printf 'a\\nb' | sed '$i head'; sed '2!c X' s; sed '1a A' s s; sed -s '1i I' s s; sed '2q;a after' s; sed -n '1{a one\nn}' s; sed 'a\\\n  two spaces' s | head -2"},
	{"printf", `printf '%s|%5s|%-5s|%.2s\n' a b c defg; printf '%d %i %5d %-5d| %05d %+d % d\n' 1 2 3 4 5 6 7; printf '%x %X %o %#x %#o\n' 255 255 8 255 8; printf '%f %.2f %e %g %G\n' 1.5 2.345 12345.678 0.0001 1e20; printf '%c%c\n' abc d; printf '%b\n' 'a\tb\nc' '\0101'; printf '%q\n' 'a b' "it's"; printf 'x\n' extra; printf '%s\n' 1 2 3; printf '%s %s\n' a; printf '%d\n' 0x10 010 "'A"; printf '%d\n' abc; echo $?; printf '%d\n' 1.5; echo $?; printf '%5.1f|\n' 3.14159; printf '%%\n'; printf '\x41\101\u00e9\n'; v=$(printf '%03d' 7); echo $v; printf -v w '%s=%03d\t%q' a 7 'x y'; echo "[$w]"; printf -v e ''; echo "[$e]"; f() { local l; printf -v l '%x' 255; echo "$l"; }; f; echo "[$l]"; printf -v n '%d' x; echo "$? [$n]"; printf -v 1x a; echo $?; printf -v; echo $?; printf -v arr[2] '%s' el; echo "${arr[2]}"; printf -v q "%s" "a'b\$c"; echo "$q"; printf '%*d|%-*d|\n' 4 1 3 2; printf '%s' ; echo "[$?]"; printf '%z\n' 1; echo $?; printf; echo $?; printf '%b|%s\n' 'x\cy' z; echo; printf '%x %o %u\n' -1 -1 -1; printf '[%c]\n' ''; printf '%q\n' 'a$b' '' 'x*' "$(printf 'a\tb')"; printf '%d %s\n' 1 a 2; printf -- '%s\n' dash; printf '%.3d|%8.3f|%-8.2e|\n' 5 3.14159 1234.5; printf '%s\n' "$(printf '\e' | wc -c)"; printf '%i\n' +7 -0x10; printf '%5%|\n'; echo $?; printf '%d\n' 99999999999999999999; echo $?; printf '%g %g %g\n' 100000 1000000 0.00001234; printf 'inf: %f %e\n' inf -inf`},
	{"control-flow", `for i in 1 2 3; do echo $i; done; n=0; while [ $n -lt 3 ]; do n=$((n+1)); done; echo $n; case x.go in *.go) echo go;; *) echo other;; esac; f() { echo "f $1"; return 3; }; f z; echo $?`},
}

// hostTmpfs mounts a private tmpfs on a new directory for the host side.
func hostTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// runBoth runs script on the host (bash and coreutils, in a private
// tmpfs) and in iovfs sh (in an iovfs tmpfs) and returns both results.
func runBoth(t *testing.T, script string) (hout, herr string, hst int, iout, ierr string, ist int) {
	t.Helper()
	dir := hostTmpfs(t)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"LC_ALL=C", "TZ=UTC", "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + dir}
	var ho, he bytes.Buffer
	cmd.Stdout, cmd.Stderr = &ho, &he
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		hst = ee.ExitCode()
	}
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/w", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", "/w", "tmpfs", 0, "size=64m"); err != nil {
		t.Fatal(err)
	}
	var io, ie bytes.Buffer
	sh, err := New(p, Options{Stdout: &io, Stderr: &ie, Dir: "/w", Env: []string{"LC_ALL=C", "TZ=UTC", "HOME=/w"}})
	if err != nil {
		t.Fatal(err)
	}
	ist = sh.RunScript(context.Background(), strings.NewReader(script), "")
	return ho.String(), he.String(), hst, io.String(), ie.String(), ist
}

func TestCoreutilsDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounts a private tmpfs for the host side")
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.SkipPrivileged(t, "no bash on the host")
	}
	for _, tc := range coreutilsCases {
		t.Run(tc.name, func(t *testing.T) {
			hout, herr, hst, iout, ierr, ist := runBoth(t, tc.script)
			if hout != iout {
				t.Errorf("stdout differs\n--- host\n%s--- iovfs\n%s", hout, iout)
			}
			if hs, is := errShape(herr), errShape(ierr); hs != is {
				t.Errorf("stderr differs\n--- host\n%s--- iovfs\n%s", herr, ierr)
			}
			if hst != ist {
				t.Errorf("status: host %d, iovfs %d", hst, ist)
			}
		})
	}
}

// errShape is standard error with what cannot match removed: dd's
// timing figures, and the shell's name and line number before a shell
// builtin's message ("bash: line 1: printf: ...").
func errShape(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = shellPrefix.ReplaceAllString(l, "")
		if i := strings.Index(l, " copied, "); i >= 0 {
			l = l[:i] + " copied, TIME"
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

var shellPrefix = regexp.MustCompile(`^(bash|iovfs sh): line [0-9]+: `)

// TestDfDifferential compares df on a 64 MiB tmpfs with some data in it;
// the mount point differs by design, so the last column is left out.
func TestDfDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounts a private tmpfs for the host side")
	script := `head -c 3000000 /dev/zero > f; mkdir d; df .; df -h .; df -h nope; echo $?`
	hout, herr, hst, iout, ierr, ist := runBoth(t, script)
	strip := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if i := strings.LastIndexByte(l, ' '); i > 0 {
				l = l[:i]
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	if strip(hout) != strip(iout) {
		t.Errorf("stdout differs\n--- host\n%s--- iovfs\n%s", hout, iout)
	}
	if herr != ierr || hst != ist {
		t.Errorf("stderr/status differ\n--- host (%d)\n%s--- iovfs (%d)\n%s", hst, herr, ist, ierr)
	}
}

// TestLsColumns compares ls's terminal layout with GNU ls -C at three
// widths over the same names.
func TestLsColumns(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := range 37 {
		n := fmt.Sprintf("name-%d%s", i, strings.Repeat("x", i%9))
		names = append(names, n)
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(names)
	for _, width := range []int{40, 80, 132} {
		cmd := exec.Command("ls", "-C", "-T", "0", "-w", strconv.Itoa(width)) // spaces, not tabs
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C"}
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		printColumns(&got, names, width)
		if got.String() != string(want) {
			t.Errorf("width %d:\n--- GNU ls -C\n%s--- iovfs\n%s", width, want, got.String())
		}
	}
}
