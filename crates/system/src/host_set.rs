//! Host sets of configuration files (`hosts = "0,2,5-7"`) and the
//! per-host arguments of programs (`{ip}`, `{host}`).

use nanopu_network::host_ip;

/// Parses a host set such as `"0,2,5-7"` (hosts of a network of `n`).
pub fn parse_hosts(spec: &str, n: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let parse = |x: &str| {
            x.parse::<usize>()
                .map_err(|_| format!("hosts = {spec:?}: {x:?} is not a host number"))
        };
        let (a, b) = (parse(a)?, parse(b)?);
        if a > b || b >= n {
            return Err(format!(
                "hosts = {spec:?}: {part:?} is not a range of hosts 0..{}",
                n.saturating_sub(1)
            ));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// `args` with `{ip}` and `{host}` replaced for host `h`.
pub fn host_args(args: &[String], h: usize) -> Vec<String> {
    let ip = std::net::Ipv4Addr::from(host_ip(h)).to_string();
    args.iter()
        .map(|a| a.replace("{ip}", &ip).replace("{host}", &h.to_string()))
        .collect()
}
