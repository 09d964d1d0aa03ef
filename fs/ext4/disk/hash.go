package disk

// Directory index hashes, after the kernel's fs/ext4/hash.c. The signed
// variants treat name bytes as signed char, as x86 compilers did when the
// format was set; EXT2_FLAGS_UNSIGNED_HASH selects the unsigned ones.

import "math/bits"

const (
	hashLegacy = iota
	hashHalfMD4
	hashTEA
	hashLegacyUnsigned
	hashHalfMD4Unsigned
	hashTEAUnsigned
	hashSipHash
)

func teaTransform(buf *[4]uint32, in []uint32) {
	const delta = 0x9E3779B9
	var sum uint32
	b0, b1 := buf[0], buf[1]
	a, b, c, d := in[0], in[1], in[2], in[3]
	for n := 0; n < 16; n++ {
		sum += delta
		b0 += ((b1 << 4) + a) ^ (b1 + sum) ^ ((b1 >> 5) + b)
		b1 += ((b0 << 4) + c) ^ (b0 + sum) ^ ((b0 >> 5) + d)
	}
	buf[0] += b0
	buf[1] += b1
}

func halfMD4Transform(buf *[4]uint32, in []uint32) {
	const k2, k3 = 0x5A827999, 0x6ED9EBA1
	f := func(x, y, z uint32) uint32 { return z ^ (x & (y ^ z)) }
	g := func(x, y, z uint32) uint32 { return (x & y) + ((x ^ y) & z) }
	h := func(x, y, z uint32) uint32 { return x ^ y ^ z }
	a, b, c, d := buf[0], buf[1], buf[2], buf[3]
	r := func(fn func(x, y, z uint32) uint32, a *uint32, b, c, d, x uint32, s int) {
		*a = bits.RotateLeft32(*a+fn(b, c, d)+x, s)
	}
	r(f, &a, b, c, d, in[0], 3)
	r(f, &d, a, b, c, in[1], 7)
	r(f, &c, d, a, b, in[2], 11)
	r(f, &b, c, d, a, in[3], 19)
	r(f, &a, b, c, d, in[4], 3)
	r(f, &d, a, b, c, in[5], 7)
	r(f, &c, d, a, b, in[6], 11)
	r(f, &b, c, d, a, in[7], 19)

	r(g, &a, b, c, d, in[1]+k2, 3)
	r(g, &d, a, b, c, in[3]+k2, 5)
	r(g, &c, d, a, b, in[5]+k2, 9)
	r(g, &b, c, d, a, in[7]+k2, 13)
	r(g, &a, b, c, d, in[0]+k2, 3)
	r(g, &d, a, b, c, in[2]+k2, 5)
	r(g, &c, d, a, b, in[4]+k2, 9)
	r(g, &b, c, d, a, in[6]+k2, 13)

	r(h, &a, b, c, d, in[3]+k3, 3)
	r(h, &d, a, b, c, in[7]+k3, 9)
	r(h, &c, d, a, b, in[2]+k3, 11)
	r(h, &b, c, d, a, in[6]+k3, 15)
	r(h, &a, b, c, d, in[1]+k3, 3)
	r(h, &d, a, b, c, in[5]+k3, 9)
	r(h, &c, d, a, b, in[0]+k3, 11)
	r(h, &b, c, d, a, in[4]+k3, 15)

	buf[0] += a
	buf[1] += b
	buf[2] += c
	buf[3] += d
}

func legacyHash(name []byte, signed bool) uint32 {
	var hash0, hash1 uint32 = 0x12a3fe2d, 0x37abe8f9
	for _, ch := range name {
		c := int32(ch)
		if signed {
			c = int32(int8(ch))
		}
		hash := hash1 + (hash0 ^ uint32(c*7152373))
		if hash&0x80000000 != 0 {
			hash -= 0x7fffffff
		}
		hash1, hash0 = hash0, hash
	}
	return hash0 << 1
}

// str2hashbuf packs up to 4*num bytes of msg into buf the way
// str2hashbuf_{signed,unsigned} do, padding with the length.
func str2hashbuf(msg []byte, buf []uint32, num int, signed bool) {
	l := uint32(len(msg))
	pad := l | l<<8
	pad |= pad << 16
	val := pad
	if len(msg) > num*4 {
		msg = msg[:num*4]
	}
	k := 0
	for i, ch := range msg {
		c := uint32(ch)
		if signed {
			c = uint32(int32(int8(ch)))
		}
		val = c + (val << 8)
		if i%4 == 3 {
			buf[k] = val
			k++
			val = pad
			num--
		}
	}
	num--
	if num >= 0 {
		buf[k] = val
		k++
	}
	for num--; num >= 0; num-- {
		buf[k] = pad
		k++
	}
}

// dxHash returns the major hash of name (low bit clear) for a hash version
// 0..5, as ext4fs_dirhash computes it; ok is false for other versions.
func dxHash(name []byte, version uint8, seed [4]uint32) (hash uint32, ok bool) {
	hash, _, ok = dxHashes(name, version, seed)
	return hash, ok
}

// dxHashes is dxHash with the minor hash too (0 for the legacy hashes),
// which orders a hash-order listing's entries of equal major hash.
func dxHashes(name []byte, version uint8, seed [4]uint32) (hash, minor uint32, ok bool) {
	buf := [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}
	if seed != [4]uint32{} {
		buf = seed
	}
	var in [8]uint32
	switch version {
	case hashLegacy, hashLegacyUnsigned:
		hash = legacyHash(name, version == hashLegacy)
	case hashHalfMD4, hashHalfMD4Unsigned:
		for p := name; len(p) > 0; {
			str2hashbuf(p, in[:], 8, version == hashHalfMD4)
			halfMD4Transform(&buf, in[:])
			if len(p) <= 32 {
				break
			}
			p = p[32:]
		}
		hash, minor = buf[1], buf[2]
	case hashTEA, hashTEAUnsigned:
		for p := name; len(p) > 0; {
			str2hashbuf(p, in[:], 4, version == hashTEA)
			teaTransform(&buf, in[:4])
			if len(p) <= 16 {
				break
			}
			p = p[16:]
		}
		hash, minor = buf[0], buf[1]
	default:
		return 0, 0, false
	}
	hash &^= 1
	if hash == 0x7fffffff<<1 { // EXT4_HTREE_EOF_32BIT << 1
		hash = (0x7fffffff - 1) << 1
	}
	return hash, minor, true
}
