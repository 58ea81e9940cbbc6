package protocol

// ValidTimestamp reports whether s is an RFC 3339 date-time as JSON Schema's
// "date-time" format reads it: YYYY-MM-DD, a T (or t), hh:mm:ss, an
// optional fraction of one or more digits, and Z (or z) or a ±hh:mm offset.
//
// The check is lexical and calendrical only — it never consults a clock or
// a time zone database. Year 0000 is refused, months and days follow the
// Gregorian calendar with leap years, hours run to 23, minutes to 59,
// seconds to 60 (a leap second is accepted at any minute, because whether
// one occurred is a fact about the world, not about the text), and offsets
// are at most 23:59.
func ValidTimestamp(s string) bool { return validTimestamp(s) }

// validTimestamp is ValidTimestamp for a string or for the bytes of one in
// a JSON text.
func validTimestamp[T string | []byte](s T) bool {
	// Fixed prefix: "YYYY-MM-DDThh:mm:ss" is 19 bytes.
	if len(s) < 20 {
		return false
	}
	year, ok1 := digits(s, 0, 4)
	month, ok2 := digits(s, 5, 2)
	day, ok3 := digits(s, 8, 2)
	hour, ok4 := digits(s, 11, 2)
	minute, ok5 := digits(s, 14, 2)
	second, ok6 := digits(s, 17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return false
	}
	if s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return false
	}
	if year == 0 || month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60 {
		return false
	}
	if day < 1 || day > daysIn(year, month) {
		return false
	}
	rest := s[19:]
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, okh := digits(rest, 1, 2)
		om, okm := digits(rest, 4, 2)
		return okh && okm && oh <= 23 && om <= 59
	}
	return false
}

// digits parses s[at:at+n] as an unsigned decimal of exactly n ASCII digits.
func digits[T string | []byte](s T, at, n int) (int, bool) {
	if at+n > len(s) {
		return 0, false
	}
	v := 0
	for i := at; i < at+n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%400 == 0 || (year%4 == 0 && year%100 != 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
