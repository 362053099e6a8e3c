//! The built-in value formats of `expect.formats` and of the behaviour
//! snapshot's `formats`: pure checks, no network. [`detect`] names the most
//! specific format a string satisfies, in the fixed order of [`PRIORITY`].

use crate::file::Format;

/// Detection order, most specific first. The dictionary formats cannot
/// overlap: ISO 4217 codes have three letters, ISO 3166 alpha-2 two, and a
/// country name is longer than both.
pub const PRIORITY: [Format; 9] = [
    Format::Rfc3339,
    Format::Rfc3339Local,
    Format::Date,
    Format::Uuid,
    Format::Iso4217,
    Format::Iso3166Alpha2,
    Format::CountryName,
    Format::Email,
    Format::Uri,
];

impl Format {
    /// The name as written in a contracts file and the snapshot.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Rfc3339 => "rfc3339",
            Format::Rfc3339Local => "rfc3339-local",
            Format::Date => "date",
            Format::Iso3166Alpha2 => "iso-3166-alpha-2",
            Format::CountryName => "country-name",
            Format::Iso4217 => "iso-4217",
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Uuid => "uuid",
        }
    }

    /// Whether `s` is a value of this format.
    pub fn holds(self, s: &str) -> bool {
        match self {
            Format::Rfc3339 => date_time(s, true),
            Format::Rfc3339Local => date_time(s, false),
            Format::Date => full_date(s),
            Format::Iso3166Alpha2 => s.len() == 2 && ISO_3166_ALPHA_2.contains(&s),
            Format::CountryName => s.len() > 3 && country_names().contains(&s.to_lowercase()),
            Format::Iso4217 => s.len() == 3 && ISO_4217.contains(&s),
            Format::Email => email(s),
            Format::Uri => uri(s),
            Format::Uuid => uuid(s),
        }
    }
}

/// [`COUNTRY_NAMES`] in lowercase, built once.
fn country_names() -> &'static std::collections::HashSet<String> {
    static NAMES: std::sync::OnceLock<std::collections::HashSet<String>> =
        std::sync::OnceLock::new();
    NAMES.get_or_init(|| COUNTRY_NAMES.iter().map(|n| n.to_lowercase()).collect())
}

/// The most specific built-in format `s` satisfies, if any.
pub fn detect(s: &str) -> Option<Format> {
    PRIORITY.into_iter().find(|f| f.holds(s))
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// RFC 3339 `full-date`: `YYYY-MM-DD`, with the day within its month.
fn full_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..10])) else {
        return false;
    };
    toolpin_manifest::time::days_in_month(i64::from(y), m)
        .is_some_and(|days| (1..=days).contains(&d))
}

/// RFC 3339 `partial-time`: `hh:mm:ss` with optional `.fraction`; a leap
/// second (60) is allowed.
fn partial_time(b: &[u8]) -> bool {
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(h), Some(m), Some(s)) = (digits(&b[..2]), digits(&b[3..5]), digits(&b[6..8])) else {
        return false;
    };
    if h > 23 || m > 59 || s > 60 {
        return false;
    }
    match &b[8..] {
        [] => true,
        [b'.', rest @ ..] => !rest.is_empty() && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// RFC 3339 `date-time` (`T` or `t` or a space between), with its offset
/// (`Z`, `z`, `±hh:mm`) when `offset`, without any when not.
fn date_time(s: &str, offset: bool) -> bool {
    let b = s.as_bytes();
    if b.len() < 19 || !s.is_char_boundary(10) || !full_date(&s[..10]) {
        return false;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return false;
    }
    let rest = &b[11..];
    if !offset {
        return partial_time(rest);
    }
    let (time, zone) = match rest.last() {
        Some(b'Z' | b'z') => (&rest[..rest.len() - 1], None),
        _ if rest.len() >= 6 => {
            let (t, z) = rest.split_at(rest.len() - 6);
            (t, Some(z))
        }
        _ => return false,
    };
    if !partial_time(time) {
        return false;
    }
    match zone {
        None => true,
        Some(z) => {
            matches!(z[0], b'+' | b'-')
                && z[3] == b':'
                && digits(&z[1..3]).is_some_and(|h| h <= 23)
                && digits(&z[4..6]).is_some_and(|m| m <= 59)
        }
    }
}

/// 8-4-4-4-12 hexadecimal digits.
fn uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Pragmatic: `local@domain.tld`, no spaces, one `@`, a dotted domain of
/// letters, digits and hyphens whose last label has two letters or more.
fn email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~.-".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        && labels
            .last()
            .is_some_and(|t| t.len() >= 2 && t.chars().all(|c| c.is_ascii_alphabetic()));
    local_ok && domain_ok
}

/// RFC 3986: `scheme ":" rest`, the scheme a letter then letters, digits,
/// `+`, `-`, `.`; no whitespace or control characters anywhere.
fn uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// ISO 3166-1 alpha-2: the 249 officially assigned codes.
pub const ISO_3166_ALPHA_2: &[&str] = &[
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ",
    "BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS",
    "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN",
    "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM", "DO", "DZ", "EC", "EE",
    "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF",
    "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM",
    "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM",
    "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC",
    "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK",
    "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA",
    "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG",
    "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW",
    "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS",
    "ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO",
    "TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
    "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
];

/// ISO 4217: the active currency and fund codes (including the ones being
/// phased out, ANG, SLL and ZWL, beside their successors XCG, SLE and ZWG).
pub const ISO_4217: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD",
    "CAD", "CDF", "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUC", "CUP",
    "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
    "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS",
    "INR", "IQD", "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW",
    "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD",
    "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN",
    "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR",
    "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SLL",
    "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY",
    "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS", "VED", "VES",
    "VND", "VUV", "WST", "XAF", "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XCD", "XCG", "XDR",
    "XOF", "XPD", "XPF", "XPT", "XSU", "XTS", "XUA", "XXX", "YER", "ZAR", "ZMW", "ZWG", "ZWL",
];

/// English short names of the countries and territories with an alpha-2
/// code, with the common variants (compared case-insensitively).
pub const COUNTRY_NAMES: &[&str] = &[
    "Afghanistan",
    "Åland Islands",
    "Aland Islands",
    "Albania",
    "Algeria",
    "American Samoa",
    "Andorra",
    "Angola",
    "Anguilla",
    "Antarctica",
    "Antigua and Barbuda",
    "Argentina",
    "Armenia",
    "Aruba",
    "Australia",
    "Austria",
    "Azerbaijan",
    "Bahamas",
    "The Bahamas",
    "Bahrain",
    "Bangladesh",
    "Barbados",
    "Belarus",
    "Belgium",
    "Belize",
    "Benin",
    "Bermuda",
    "Bhutan",
    "Bolivia",
    "Bonaire, Sint Eustatius and Saba",
    "Caribbean Netherlands",
    "Bosnia and Herzegovina",
    "Botswana",
    "Bouvet Island",
    "Brazil",
    "British Indian Ocean Territory",
    "Brunei",
    "Brunei Darussalam",
    "Bulgaria",
    "Burkina Faso",
    "Burundi",
    "Cabo Verde",
    "Cape Verde",
    "Cambodia",
    "Cameroon",
    "Canada",
    "Cayman Islands",
    "Central African Republic",
    "Chad",
    "Chile",
    "China",
    "Christmas Island",
    "Cocos (Keeling) Islands",
    "Cocos Islands",
    "Colombia",
    "Comoros",
    "Congo",
    "Republic of the Congo",
    "Democratic Republic of the Congo",
    "DR Congo",
    "Cook Islands",
    "Costa Rica",
    "Côte d'Ivoire",
    "Cote d'Ivoire",
    "Ivory Coast",
    "Croatia",
    "Cuba",
    "Curaçao",
    "Curacao",
    "Cyprus",
    "Czechia",
    "Czech Republic",
    "Denmark",
    "Djibouti",
    "Dominica",
    "Dominican Republic",
    "Ecuador",
    "Egypt",
    "El Salvador",
    "Equatorial Guinea",
    "Eritrea",
    "Estonia",
    "Eswatini",
    "Swaziland",
    "Ethiopia",
    "Falkland Islands",
    "Faroe Islands",
    "Fiji",
    "Finland",
    "France",
    "French Guiana",
    "French Polynesia",
    "French Southern Territories",
    "Gabon",
    "Gambia",
    "The Gambia",
    "Georgia",
    "Germany",
    "Ghana",
    "Gibraltar",
    "Greece",
    "Greenland",
    "Grenada",
    "Guadeloupe",
    "Guam",
    "Guatemala",
    "Guernsey",
    "Guinea",
    "Guinea-Bissau",
    "Guyana",
    "Haiti",
    "Heard Island and McDonald Islands",
    "Holy See",
    "Vatican City",
    "Honduras",
    "Hong Kong",
    "Hungary",
    "Iceland",
    "India",
    "Indonesia",
    "Iran",
    "Iraq",
    "Ireland",
    "Isle of Man",
    "Israel",
    "Italy",
    "Jamaica",
    "Japan",
    "Jersey",
    "Jordan",
    "Kazakhstan",
    "Kenya",
    "Kiribati",
    "North Korea",
    "South Korea",
    "Korea",
    "Kuwait",
    "Kyrgyzstan",
    "Laos",
    "Lao People's Democratic Republic",
    "Latvia",
    "Lebanon",
    "Lesotho",
    "Liberia",
    "Libya",
    "Liechtenstein",
    "Lithuania",
    "Luxembourg",
    "Macao",
    "Macau",
    "Madagascar",
    "Malawi",
    "Malaysia",
    "Maldives",
    "Mali",
    "Malta",
    "Marshall Islands",
    "Martinique",
    "Mauritania",
    "Mauritius",
    "Mayotte",
    "Mexico",
    "Micronesia",
    "Moldova",
    "Monaco",
    "Mongolia",
    "Montenegro",
    "Montserrat",
    "Morocco",
    "Mozambique",
    "Myanmar",
    "Burma",
    "Namibia",
    "Nauru",
    "Nepal",
    "Netherlands",
    "The Netherlands",
    "Holland",
    "New Caledonia",
    "New Zealand",
    "Nicaragua",
    "Niger",
    "Nigeria",
    "Niue",
    "Norfolk Island",
    "North Macedonia",
    "Macedonia",
    "Northern Mariana Islands",
    "Norway",
    "Oman",
    "Pakistan",
    "Palau",
    "Palestine",
    "Panama",
    "Papua New Guinea",
    "Paraguay",
    "Peru",
    "Philippines",
    "Pitcairn",
    "Pitcairn Islands",
    "Poland",
    "Portugal",
    "Puerto Rico",
    "Qatar",
    "Réunion",
    "Reunion",
    "Romania",
    "Russia",
    "Russian Federation",
    "Rwanda",
    "Saint Barthélemy",
    "Saint Barthelemy",
    "Saint Helena, Ascension and Tristan da Cunha",
    "Saint Helena",
    "Saint Kitts and Nevis",
    "Saint Lucia",
    "Saint Martin",
    "Saint Pierre and Miquelon",
    "Saint Vincent and the Grenadines",
    "Samoa",
    "San Marino",
    "São Tomé and Príncipe",
    "Sao Tome and Principe",
    "Saudi Arabia",
    "Senegal",
    "Serbia",
    "Seychelles",
    "Sierra Leone",
    "Singapore",
    "Sint Maarten",
    "Slovakia",
    "Slovenia",
    "Solomon Islands",
    "Somalia",
    "South Africa",
    "South Georgia and the South Sandwich Islands",
    "South Sudan",
    "Spain",
    "Sri Lanka",
    "Sudan",
    "Suriname",
    "Svalbard and Jan Mayen",
    "Sweden",
    "Switzerland",
    "Syria",
    "Taiwan",
    "Tajikistan",
    "Tanzania",
    "Thailand",
    "Timor-Leste",
    "East Timor",
    "Togo",
    "Tokelau",
    "Tonga",
    "Trinidad and Tobago",
    "Tunisia",
    "Turkey",
    "Türkiye",
    "Turkiye",
    "Turkmenistan",
    "Turks and Caicos Islands",
    "Tuvalu",
    "Uganda",
    "Ukraine",
    "United Arab Emirates",
    "United Kingdom",
    "Great Britain",
    "United States",
    "United States of America",
    "United States Minor Outlying Islands",
    "Uruguay",
    "Uzbekistan",
    "Vanuatu",
    "Venezuela",
    "Vietnam",
    "Viet Nam",
    "British Virgin Islands",
    "U.S. Virgin Islands",
    "US Virgin Islands",
    "Wallis and Futuna",
    "Western Sahara",
    "Yemen",
    "Zambia",
    "Zimbabwe",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f: Format, good: &[&str], bad: &[&str]) {
        for s in good {
            assert!(f.holds(s), "{} should hold for {s:?}", f.as_str());
        }
        for s in bad {
            assert!(!f.holds(s), "{} should not hold for {s:?}", f.as_str());
        }
    }

    #[test]
    fn the_code_lists_are_complete_and_unique() {
        assert_eq!(ISO_3166_ALPHA_2.len(), 249);
        let mut sorted = ISO_3166_ALPHA_2.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 249);
        let mut c = ISO_4217.to_vec();
        c.sort_unstable();
        c.dedup();
        assert_eq!(c.len(), ISO_4217.len());
        assert!(ISO_4217.iter().all(|s| s.len() == 3));
        assert!(COUNTRY_NAMES.iter().all(|n| n.len() > 3));
    }

    #[test]
    fn rfc3339() {
        check(
            Format::Rfc3339,
            &[
                "2026-12-02T10:00:00Z",
                "2024-02-29T23:59:60.123+05:30",
                "2026-01-01t00:00:00z",
                "2026-12-02 10:00:00-08:00",
            ],
            &[
                "2026-12-02T10:00:00",
                "2026-12-02",
                "2026-13-02T10:00:00Z",
                "2025-02-29T10:00:00Z",
                "2026-12-02T24:00:00Z",
                "2026-12-02T10:00:00+24:00",
                "2026-12-02T10:00:00.Z",
                "2026-12-02T10:00Z",
                "x2026-12-02T10:00:00Z",
            ],
        );
    }

    #[test]
    fn rfc3339_local() {
        check(
            Format::Rfc3339Local,
            &["2026-12-02T10:00:00", "2026-12-02T10:00:00.5"],
            &[
                "2026-12-02T10:00:00Z",
                "2026-12-02T10:00:00+01:00",
                "2026-12-02",
                "2026-12-02T10:60:00",
            ],
        );
    }

    #[test]
    fn date() {
        check(
            Format::Date,
            &["2026-12-02", "2000-02-29", "1999-12-31"],
            &[
                "1900-02-29",
                "2026-04-31",
                "2026-00-10",
                "2026-1-02",
                "2026-12-02T10:00:00Z",
                "20261202",
            ],
        );
    }

    #[test]
    fn countries_and_currencies() {
        check(
            Format::Iso3166Alpha2,
            &["DE", "FR", "JP", "US", "GB", "AX"],
            &["de", "UK", "EU", "XK", "DEU", "D"],
        );
        check(
            Format::CountryName,
            &[
                "Germany",
                "france",
                "UNITED STATES",
                "United Kingdom",
                "Côte d'Ivoire",
                "Japan",
            ],
            &["DE", "Atlantis", "Europe", "USA", "", " Germany"],
        );
        check(
            Format::Iso4217,
            &["EUR", "USD", "JPY", "CHF"],
            &["eur", "EU", "DEM", "XYZ", "EURO"],
        );
    }

    #[test]
    fn email_uri_uuid() {
        check(
            Format::Email,
            &["a@example.com", "first.last+tag@sub.example.co.uk"],
            &[
                "a@b",
                "@example.com",
                "a@@example.com",
                "a b@example.com",
                "a@-x.com",
                "a..b@example.com",
                "a@example.c0m",
            ],
        );
        check(
            Format::Uri,
            &[
                "https://example.com/a?b#c",
                "urn:isbn:0451450523",
                "mailto:a@example.com",
                "git+ssh://h/x",
            ],
            &[
                "example.com",
                "1http://x",
                "http:",
                "http://exa mple.com",
                ":x",
                "a_b:c",
            ],
        );
        check(
            Format::Uuid,
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "123E4567-E89B-12D3-A456-426614174000",
            ],
            &[
                "123e4567e89b12d3a456426614174000",
                "123e4567-e89b-12d3-a456-42661417400g",
                "123e4567-e89b-12d3-a456-4266141740000",
            ],
        );
    }

    #[test]
    fn detection_is_the_most_specific() {
        assert_eq!(detect("2026-12-02T10:00:00Z"), Some(Format::Rfc3339));
        assert_eq!(detect("2026-12-02T10:00:00"), Some(Format::Rfc3339Local));
        assert_eq!(detect("2026-12-02"), Some(Format::Date));
        assert_eq!(detect("DE"), Some(Format::Iso3166Alpha2));
        assert_eq!(detect("EUR"), Some(Format::Iso4217));
        assert_eq!(detect("Germany"), Some(Format::CountryName));
        assert_eq!(detect("a@example.com"), Some(Format::Email));
        assert_eq!(detect("mailto:a@example.com"), Some(Format::Uri));
        assert_eq!(detect("open"), None);
        assert_eq!(detect("ord-0001"), None);
        // Every format's name parses back to it.
        for f in PRIORITY {
            let parsed: Format = serde_json::from_value(serde_json::json!(f.as_str())).unwrap();
            assert_eq!(parsed, f);
        }
    }
}
