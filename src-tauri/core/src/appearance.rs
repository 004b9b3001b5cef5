//! Whether the desktop's GTK settings ask for a dark theme (issue 20: "System" follows the
//! GTK theme). WebKitGTK and the window library take light or dark only from the settings
//! portal (`org.freedesktop.appearance` `color-scheme`); a desktop without one (a bare X
//! session, many window managers, Xvfb) still says dark through GTK: the
//! `gtk-application-prefer-dark-theme` setting, a theme named for its dark variant
//! (`Adwaita-dark`, `Arc-Darker`), or `GTK_THEME=Adwaita:dark`. The shell reads those and
//! asks this; no GTK here.

/// Dark when any of the GTK signals says so; light (GTK's own default) otherwise.
pub fn gtk_is_dark(
    prefer_dark: bool,
    theme_name: Option<&str>,
    gtk_theme_env: Option<&str>,
) -> bool {
    prefer_dark || gtk_theme_env.is_some_and(theme_is_dark) || theme_name.is_some_and(theme_is_dark)
}

/// `Name:variant` (the `GTK_THEME` form) with the variant `dark`, or a name with a word
/// that starts with "dark" (`Adwaita-dark`, `Arc-Darker`, `Yaru_dark`).
fn theme_is_dark(name: &str) -> bool {
    let (base, variant) = match name.split_once(':') {
        Some((b, v)) => (b, Some(v)),
        None => (name, None),
    };
    if variant.is_some_and(|v| v.trim().eq_ignore_ascii_case("dark")) {
        return true;
    }
    base.split(['-', '_', ' ', '.'])
        .any(|w| w.to_ascii_lowercase().starts_with("dark"))
}

#[cfg(test)]
mod tests {
    use super::gtk_is_dark;

    #[test]
    fn each_gtk_signal_of_a_dark_theme_is_heard() {
        assert!(gtk_is_dark(true, Some("Adwaita"), None));
        assert!(gtk_is_dark(false, Some("Adwaita-dark"), None));
        assert!(gtk_is_dark(false, Some("Arc-Darker"), None));
        assert!(gtk_is_dark(false, Some("Yaru_dark"), None));
        assert!(gtk_is_dark(false, Some("Adwaita"), Some("Adwaita:dark")));
        assert!(gtk_is_dark(false, None, Some("Adwaita-dark")));
    }

    #[test]
    fn a_light_theme_or_none_is_light() {
        assert!(!gtk_is_dark(false, None, None));
        assert!(!gtk_is_dark(false, Some("Adwaita"), None));
        assert!(!gtk_is_dark(false, Some("Adwaita"), Some("Adwaita:light")));
        assert!(!gtk_is_dark(false, Some("HighContrast"), Some("")));
        // A word that merely contains the letters is not a dark variant.
        assert!(!gtk_is_dark(false, Some("Nordarkive"), None));
    }
}
