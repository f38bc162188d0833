//! Every shell command of the README and of the user guide (`docs/*.md`) is tested.
//!
//! - A ```` ```bash ```` block is run here, as a user would type it: with `bash -eu` in a
//!   scratch directory where `data/` is the repository's, `HOME` is a fresh directory,
//!   `copr` on the PATH is the binary under test and `cargo run --release --bin copr --`
//!   stands for it. The block must succeed. A ```` ```text ```` block right after it is
//!   that block's output: each of its lines must be a line of the output (numbers with
//!   four decimals, the timings, may differ).
//! - A ```` ```sh ```` block needs what this test cannot have (MPI, a compiler, an
//!   installation, the whole suite): `scripts/test-all` or `scripts/mpi-tests.sh` runs
//!   it; here each of its commands must start with a program those scripts run, and
//!   every repository file it names must exist.
//! - Rust blocks are doctests (`src/lib.rs` includes the pages).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn root() -> PathBuf {
    common::root().to_path_buf()
}

/// The pages whose commands are tested.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// A fenced block: its info string, its text and the line it starts on.
struct Block {
    lang: String,
    text: String,
    line: usize,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (i, line) in page.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(info)) => {
                current = Some(Block {
                    lang: info.trim().to_string(),
                    text: String::new(),
                    line: i + 1,
                })
            }
            (Some(_), Some(_)) => out.push(current.take().unwrap()),
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// Lines of a text with the four-decimal numbers (timings) masked.
fn masked(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    let four = w.split_once('.').is_some_and(|(a, b)| {
                        !a.is_empty()
                            && a.chars().all(|c| c.is_ascii_digit())
                            && b.len() == 4
                            && b.chars().all(|c| c.is_ascii_digit())
                    });
                    if four {
                        "#.####"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("copr-guide-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(root().join("data"), dir.join("data")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_copr"), dir.join("bin/copr")).unwrap();
    dir
}

fn run_block(dir: &Path, script: &str) -> std::process::Output {
    let script = script.replace("cargo run --release --bin copr --", "copr");
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-eu", "-c", &script])
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn every_bash_block_runs_and_shows_its_real_output() {
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let bs = blocks(&text);
        for (k, b) in bs.iter().enumerate() {
            if b.lang != "bash" {
                continue;
            }
            let dir = scratch(&format!("{name}-{}", b.line));
            let out = run_block(&dir, &b.text);
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(
                out.status.success(),
                "{name}:{}: the block fails\n{}\n{stderr}",
                b.line,
                b.text
            );
            if let Some(next) = bs.get(k + 1).filter(|n| n.lang == "text") {
                let got = masked(&stdout);
                for want in masked(&next.text) {
                    assert!(
                        got.contains(&want),
                        "{name}:{}: the output lacks the line\n{want}\nit is\n{stdout}",
                        next.line
                    );
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
            ran += 1;
        }
    }
    assert!(ran >= 8, "only {ran} bash blocks");
}

#[test]
fn every_sh_block_names_what_the_test_scripts_run() {
    let scripts = ["scripts/test-all", "scripts/mpi-tests.sh"]
        .map(|s| std::fs::read_to_string(root().join(s)).unwrap())
        .join("\n");
    let programs = [
        "scripts/test-all",
        "cargo",
        "capi/install.sh",
        "export",
        "mpicc",
        "mpifort",
        "mpirun",
        "target/release/copr",
    ];
    let mut seen = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        for b in blocks(&text).iter().filter(|b| b.lang == "sh") {
            let joined = b.text.replace("\\\n", " ");
            for cmd in joined.lines().filter(|l| !l.trim().is_empty()) {
                let first = cmd.split_whitespace().next().unwrap();
                assert!(
                    programs.contains(&first),
                    "{name}:{}: {first} is not run by the test scripts",
                    b.line
                );
                assert!(
                    scripts.contains(first.trim_start_matches("target/release/")),
                    "{name}:{}: the scripts never run {first}",
                    b.line
                );
                for word in cmd.split_whitespace() {
                    let w = word.trim_matches(|c| c == '"' || c == '\'');
                    let repo_file = ["capi/", "scripts/", "data/", "interpose/", "examples/"]
                        .iter()
                        .any(|p| w.starts_with(p));
                    if repo_file {
                        assert!(root().join(w).exists(), "{name}:{}: no file {w}", b.line);
                    }
                }
                seen += 1;
            }
        }
    }
    assert!(seen > 0);
}

#[test]
fn readme_starts_with_the_main_job_and_the_test_suite_and_stays_short() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let cmds: Vec<String> = blocks(&readme)
        .into_iter()
        .filter(|b| b.lang == "bash" || b.lang == "sh")
        .map(|b| b.text.trim().to_string())
        .take(2)
        .collect();
    assert_eq!(
        cmds,
        [
            "cargo run --release --bin copr -- sweep",
            "scripts/test-all"
        ]
    );
    let n = readme.lines().count();
    assert!(n <= 260, "README has {n} lines");
    // every guide page is linked from the README or from the guide's index
    let index = std::fs::read_to_string(root().join("docs/README.md")).unwrap();
    for page in pages().iter().skip(1) {
        let f = page.file_name().unwrap().to_string_lossy().to_string();
        // SUMMARY.md is the book's table of contents, not a page
        if f != "README.md" && f != "SUMMARY.md" {
            assert!(
                index.contains(&format!("({f})")),
                "docs/README.md lacks {f}"
            );
        }
    }
    // relative links of README and guide name files that exist
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap();
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.contains("://") {
                continue;
            }
            assert!(
                dir.join(file).exists(),
                "{}: the link {target} names no file",
                page.display()
            );
        }
    }
}

/// The relative links of a Markdown text (`[text](target)`, without `#anchor`), and
/// their lines; web addresses are left out.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(k) = rest.find("](") {
            rest = &rest[k + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or("").trim();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push((i + 1, target.to_string()));
            }
            rest = &rest[end..];
        }
    }
    out
}

/// `mdbook build docs` makes the guide a book: `docs/book.toml` reads the pages from
/// `docs/` and `docs/SUMMARY.md` is its table of contents. Without running mdbook
/// (installing it takes minutes), this checks that the summary lists every page of
/// the guide once and that its links resolve (the pages' links are checked with the
/// README's).
#[test]
fn the_book_lists_every_page_and_every_link_resolves() {
    let docs = root().join("docs");
    let book = std::fs::read_to_string(docs.join("book.toml")).expect("docs/book.toml");
    assert!(book.contains("src = \".\""), "{book}");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md");
    let mut listed: Vec<String> = relative_links(&summary).into_iter().map(|l| l.1).collect();
    let n = listed.len();
    listed.sort();
    listed.dedup();
    assert_eq!(listed.len(), n, "a page listed twice in SUMMARY.md");
    let all = pages();
    let mut names: Vec<String> = all
        .iter()
        .filter(|p| p.parent() == Some(docs.as_path()))
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .filter(|name| name != "SUMMARY.md")
        .collect();
    names.sort();
    assert_eq!(listed, names, "SUMMARY.md against the pages in docs/");
    // the pages' own links are checked with the README's above
    let mut broken = Vec::new();
    for (line, target) in relative_links(&summary) {
        if !docs.join(&target).exists() {
            broken.push(format!("docs/SUMMARY.md:{line}: {target}"));
        }
    }
    assert!(
        broken.is_empty(),
        "links that resolve to no file:\n{}",
        broken.join("\n")
    );
}

/// The README's pictures are what its commands draw today: each picture under `docs/`
/// equals, byte for byte, the `--svg` file of the README command shown with it, run as
/// the bash blocks are. A change to the drawing or to the numbers fails here until the
/// picture is drawn again (run the command, copy the file over the picture).
#[test]
fn the_readme_pictures_are_what_its_commands_draw() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let pictures = [
        (
            "docs/plan-b5000.svg",
            "copr plan data/plans/paper-b5000.toml --svg plan.svg",
            "plan.svg",
        ),
        (
            "docs/map-32x32-on-4x4x4.svg",
            "copr map --grid 32x32 --machine data/machines/torus-4x4x4.toml --rankfile rankfile --svg map.svg",
            "map.svg",
        ),
    ];
    for (picture, command, drawn) in pictures {
        assert!(
            readme.contains(&format!("]({picture})")),
            "the README shows no {picture}"
        );
        assert!(readme.contains(command), "the README shows no `{command}`");
        let dir = scratch(&format!("picture-{drawn}"));
        let out = run_block(&dir, command);
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read(dir.join(drawn)).unwrap();
        let want = std::fs::read(root().join(picture)).unwrap();
        assert!(
            got == want,
            "{picture} is not what `{command}` draws now: run it and copy {drawn} over {picture}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A heading's anchor as GitHub makes it: the heading's text (code marks, emphasis and
/// link targets dropped) in lower case, letters, digits, spaces, `-` and `_` kept, spaces
/// made `-`; the second heading of the same anchor gets `-1`, the third `-2`.
fn anchors(page: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut fenced = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fenced || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        // link targets out: `[text](target)` counts as `text`
        let mut text = String::new();
        let mut rest = line[hashes..].trim();
        while let Some(k) = rest.find("](") {
            text.push_str(&rest[..k]);
            rest = rest[k + 2..].split_once(')').map_or("", |(_, r)| r);
        }
        text.push_str(rest);
        let slug: String = text
            .to_lowercase()
            .chars()
            .filter(|&c| c.is_alphabetic() || c.is_ascii_digit() || " -_".contains(c))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.iter().filter(|s| **s == slug).count();
        out.push(if n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        seen.push(slug);
    }
    out
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let page = "# Scale: planning at 10⁵ ranks\n```\n# not a heading\n```\n\
                ## `copr map` (issue 13), δ ≥ 2 – x\n## Notes\n## Notes\n#notes\n";
    assert_eq!(
        anchors(page),
        [
            "scale-planning-at-10-ranks",
            "copr-map-issue-13-δ--2--x",
            "notes",
            "notes-1"
        ]
    );
}

/// Every `#anchor` link of the README, the guide and `benches/RESULTS.md` (the
/// results page's headline table links its sections) names a heading of its page.
#[test]
fn every_anchor_link_names_a_heading() {
    let mut files = pages();
    files.push(root().join("benches/RESULTS.md"));
    files.push(root().join("ARCHITECTURE.md"));
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in &files {
        let text = std::fs::read_to_string(page).unwrap();
        for (i, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(k) = rest.find("](") {
                rest = &rest[k + 2..];
                let Some(end) = rest.find(')') else { break };
                let target = &rest[..end];
                rest = &rest[end..];
                let Some((file, anchor)) = target.split_once('#') else {
                    continue;
                };
                if file.contains("://") {
                    continue;
                }
                let linked = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let Ok(linked_text) = std::fs::read_to_string(&linked) else {
                    broken.push(format!("{}:{}: no file {file}", page.display(), i + 1));
                    continue;
                };
                seen += 1;
                if !anchors(&linked_text).iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{}:{}: no heading #{anchor}",
                        page.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(seen >= 7, "only {seen} anchor links");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Every TOML example of the README and the guide is a file copr reads: a plan (a
/// `[source]` or `[[transform]]` table) with `copr plan`, anything else (a machine
/// file, a cost config) with `copr topo`. Each is written next to copies of the
/// network descriptions of `data/topology/`, which the examples name by relative path.
#[test]
fn every_toml_example_is_a_file_copr_reads() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        for b in blocks(&text).iter().filter(|b| b.lang == "toml") {
            let dir = scratch(&format!("toml-{name}-{}", b.line));
            let topology = dir.join("topology");
            std::fs::create_dir_all(&topology).unwrap();
            for e in std::fs::read_dir(root().join("data/topology")).unwrap() {
                let p = e.unwrap().path();
                std::fs::copy(&p, topology.join(p.file_name().unwrap())).unwrap();
            }
            std::fs::write(topology.join("example.toml"), &b.text).unwrap();
            let plan = b.text.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("[source]") || l.starts_with("[[transform]]")
            });
            let command = if plan { "plan" } else { "topo" };
            let out = run_block(&dir, &format!("copr {command} topology/example.toml"));
            assert!(
                out.status.success(),
                "{name}:{}: `copr {command}` refuses the example:\n{}",
                b.line,
                String::from_utf8_lossy(&out.stderr)
            );
            let _ = std::fs::remove_dir_all(&dir);
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} TOML examples");
}
