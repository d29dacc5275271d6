//! `swaptrace __synopsis` (hidden): the command synopsis, generated from the
//! clap definitions. README's synopsis block is this output
//! (`cargo xtask readme` rewrites it; tests/readme.rs checks it).

use clap::{Arg, ArgAction, Command};

/// Possible values listed in full up to this many; beyond, the value name.
const MAX_VALUES: usize = 8;

/// One line per command (per leaf of a command with subcommands), the
/// global options first.
pub fn synopsis(root: &Command) -> String {
    let name = root.get_name();
    let globals: Vec<String> = root
        .get_arguments()
        .filter(|a| shown(a) && a.is_global_set())
        .map(option)
        .collect();
    let mut o = format!("{name} {} COMMAND\n", globals.join(" "));
    for c in root.get_subcommands() {
        leaves(c, name, &mut o);
    }
    o
}

fn leaves(c: &Command, prefix: &str, o: &mut String) {
    if c.is_hide_set() || c.get_name() == "help" {
        return;
    }
    let path = format!("{prefix} {}", c.get_name());
    if c.has_subcommands() {
        for s in c.get_subcommands() {
            leaves(s, &path, o);
        }
        return;
    }
    let args: Vec<&Arg> = c
        .get_arguments()
        .filter(|a| shown(a) && !a.is_global_set())
        .collect();
    let tail = |a: &Arg| a.is_last_set() || a.is_trailing_var_arg_set();
    // `TRACE [--options] [-- CMD…]`.
    let mut words = vec![path];
    words.extend(
        args.iter()
            .filter(|a| a.is_positional() && !tail(a))
            .map(|a| positional(a)),
    );
    words.extend(
        args.iter()
            .filter(|a| !a.is_positional())
            .map(|a| option(a)),
    );
    words.extend(
        args.iter()
            .filter(|a| a.is_positional() && tail(a))
            .map(|a| positional(a)),
    );
    o.push_str(&words.join(" "));
    o.push('\n');
}

fn shown(a: &Arg) -> bool {
    !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version")
}

fn value(a: &Arg) -> String {
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !values.is_empty() && values.len() <= MAX_VALUES {
        return values.join("|");
    }
    match a.get_value_names() {
        Some(n) => n.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
        None => a.get_id().as_str().to_uppercase(),
    }
}

fn takes_value(a: &Arg) -> bool {
    a.get_num_args().is_some_and(|n| n.takes_values())
        || matches!(a.get_action(), ArgAction::Set | ArgAction::Append)
}

fn option(a: &Arg) -> String {
    let mut s = match (a.get_short(), a.get_long()) {
        (Some(c), Some(l)) => format!("-{c}|--{l}"),
        (Some(c), None) => format!("-{c}"),
        (None, Some(l)) => format!("--{l}"),
        (None, None) => a.get_id().as_str().to_string(),
    };
    if takes_value(a) {
        s = format!("{s} {}", value(a));
    }
    let repeat = matches!(a.get_action(), ArgAction::Append | ArgAction::Count);
    if a.is_required_set() {
        s
    } else if repeat {
        format!("[{s}]…")
    } else {
        format!("[{s}]")
    }
}

fn positional(a: &Arg) -> String {
    let many = a.get_num_args().is_some_and(|n| n.max_values() > 1)
        || matches!(a.get_action(), ArgAction::Append);
    let mut s = value(a);
    if many {
        s.push('…');
    }
    if a.is_last_set() || a.is_trailing_var_arg_set() {
        s = format!("-- {s}");
    }
    if a.is_required_set() {
        s
    } else {
        format!("[{s}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synopsis_shows_each_kind_of_argument() {
        let c = Command::new("t")
            .arg(
                Arg::new("strict")
                    .long("strict")
                    .global(true)
                    .action(ArgAction::SetTrue),
            )
            .subcommand(
                Command::new("run")
                    .arg(Arg::new("trace").required(true).value_name("TRACE"))
                    .arg(Arg::new("out").short('o').long("output").value_name("FILE"))
                    .arg(Arg::new("mode").long("mode").value_parser(["a", "b"]))
                    .arg(Arg::new("param").long("param").action(ArgAction::Append))
                    .arg(Arg::new("secret").long("secret").hide(true))
                    .arg(Arg::new("cmd").num_args(1..).last(true).value_name("CMD")),
            )
            .subcommand(Command::new("lab").subcommand(Command::new("restore")))
            .subcommand(Command::new("__hidden").hide(true));
        assert_eq!(
            synopsis(&c),
            "t [--strict] COMMAND\n\
             t run TRACE [-o|--output FILE] [--mode a|b] [--param PARAM]… [-- CMD…]\n\
             t lab restore\n"
        );
    }
}
