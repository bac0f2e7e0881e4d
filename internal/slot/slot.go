// Package slot computes Redis Cluster hash slots, so that work on many keys
// can be grouped into single-slot batches.
package slot

import (
	"strconv"
	"strings"
)

// Count is the number of hash slots in a Redis Cluster.
const Count = 16384

// Of returns the Cluster slot of key: CRC16 of its hash tag if it has one,
// else of the whole key, modulo Count.
func Of(key string) uint16 {
	if tag, ok := HashTag(key); ok {
		key = tag
	}
	return crc16(key) % Count
}

// HashTag returns the part of key that Redis Cluster hashes instead of the
// whole key: the bytes between the first '{' and the first '}' after it, when
// there is at least one.
func HashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster specifies.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// KeyIn returns a key whose slot is s: "{<n>}" for the least n that hashes
// there (every slot has one below a few hundred thousand).
func KeyIn(s uint16) string {
	for n := 0; ; n++ {
		if key := "{" + strconv.Itoa(n) + "}"; Of(key) == s {
			return key
		}
	}
}
